"""
Every config in training_configs/distillation constructs and trains for 2 epochs with its data
paths pointed at the fixtures (teacher configs on the tiny random BERT; the online student's
SST2_TEACHER_ARCHIVE is the tiny teacher of tests/distillation/teacher_archive.py), so none can
rot.
"""

from pathlib import Path

import pytest
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.params import with_overrides

from tests.configs_test import user_warnings
from tests.conftest import CONFIGS_ROOT
from tests.distillation.conftest import DISTILLATION_FIXTURE_EXT_VARS
from tests.distillation.teacher_archive import fixture_teacher_archive

CONFIGS = sorted((CONFIGS_ROOT / "distillation").glob("*.jsonnet"))


def test_every_task_has_teacher_and_three_students():
    names = {config.stem for config in CONFIGS}
    for task in ("sst2", "sick"):
        expected = {f"{task}_{v}" for v in ("teacher", "bilstm", "distilled", "distilled_aug")}
        assert expected <= names


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_config_trains_on_fixtures(config: Path, tmp_path, monkeypatch):
    for variable, value in DISTILLATION_FIXTURE_EXT_VARS.items():
        monkeypatch.setenv(variable, value)
    if "online" in config.name:
        monkeypatch.setenv("SST2_TEACHER_ARCHIVE", fixture_teacher_archive())
    params = Params.from_file(str(config))
    overrides = {"trainer.num_epochs": 2, "data_loader.batch_sampler.batch_size": 16}
    if "teacher" not in config.name:  # tiny student dimensions; the structure stays the config's
        overrides.update(
            {
                "model.text_field_embedder.token_embedders.tokens.embedding_dim": 8,
                # + the frozen GloVe 6B 50d channel of the *_glove students
                "model.encoder.input_size": 8 + (50 if "glove" in config.name else 0),
                "model.encoder.hidden_size": 8,
                "model.hidden_dim": 8,
            }
        )
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    model = train_model(params, serialization_dir=str(tmp_path / "run"))
    assert (tmp_path / "run" / "model.tar.gz").exists()
    assert user_warnings(tmp_path / "run") == []
    if "glove" in config.name:  # both word channels, the GloVe one frozen but for its OOV vector
        embedders = model.text_field_embedder._token_embedders
        assert set(embedders) == {"tokens", "glove"}
        trained = [n for n, p in embedders["glove"].named_parameters() if p.requires_grad]
        assert trained == ["unknown_vector"]
    if "teacher" in config.name:
        # the teacher configs must not have reached for the real 22.7M-parameter model
        assert sum(p.numel() for p in model.parameters()) < 100_000
    if "online" in config.name:  # the online teacher was used, and is not part of the student
        assert model._online_teacher and model.teacher_archive == fixture_teacher_archive()
        assert sum(p.numel() for p in model.parameters()) < 100_000
