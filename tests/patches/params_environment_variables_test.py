"""
`ldnet_allennlp.patches.params_environment_variables`: the teacher configs find the installed
teacher without any environment variable being set.
"""

import os
import subprocess
import sys

from allennlp.common import Params

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.distillation.classification.teacher import (
    TEACHER_MODEL_PATH_VARIABLE,
    installed_teacher_path,
)
from tests.conftest import CONFIGS_ROOT


def teacher_model_name() -> str:
    params = Params.from_file(str(CONFIGS_ROOT / "distillation" / "sst2_teacher.jsonnet"))
    return params["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"]


def test_teacher_config_points_at_the_installed_folder(monkeypatch):
    monkeypatch.delenv(TEACHER_MODEL_PATH_VARIABLE, raising=False)
    monkeypatch.setenv("SST2_TRAIN_DATA_PATH", "/nonexistent")
    monkeypatch.setenv("SST2_DEV_DATA_PATH", "/nonexistent")
    assert teacher_model_name() == installed_teacher_path()
    assert os.path.isdir(teacher_model_name())  # a local folder, not a hub name
    assert TEACHER_MODEL_PATH_VARIABLE not in os.environ


def test_an_exported_teacher_path_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(TEACHER_MODEL_PATH_VARIABLE, str(tmp_path))
    monkeypatch.setenv("SST2_TRAIN_DATA_PATH", "/nonexistent")
    monkeypatch.setenv("SST2_DEV_DATA_PATH", "/nonexistent")
    assert teacher_model_name() == str(tmp_path)


def test_importing_the_plugin_sets_no_environment_variable():
    environment = {k: v for k, v in os.environ.items() if k != TEACHER_MODEL_PATH_VARIABLE}
    code = "import os, ldnet_allennlp; print(repr(sorted(os.environ)))"
    before = subprocess.run(
        [sys.executable, "-c", "import os; print(repr(sorted(os.environ)))"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    after = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert TEACHER_MODEL_PATH_VARIABLE not in after
    assert after == before
