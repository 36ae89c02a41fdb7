import os

import pytest

from tests.conftest import FIXTURES_ROOT

DISTILLATION_FIXTURES = FIXTURES_ROOT / "distillation"

# The tiny fixture configs find their files through this variable (jsonnet std.extVar).
os.environ.setdefault("DISTILLATION_FIXTURES", str(DISTILLATION_FIXTURES))

# Every data-path variable of training_configs/distillation, pointed at the fixtures. The teacher
# configs get the tiny random BERT instead of the 22.7M-parameter MiniLM.
DISTILLATION_FIXTURE_EXT_VARS = {
    "TEACHER_MODEL_PATH": str(DISTILLATION_FIXTURES / "tiny_bert"),
    "SST2_TRAIN_DATA_PATH": str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_train.tsv"),
    "SST2_DEV_DATA_PATH": str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_dev.tsv"),
    "SICK_DATA_PATH": str(DISTILLATION_FIXTURES / "sick" / "sick_fixture.txt"),
    "SST2_TRANSFER_SET": str(DISTILLATION_FIXTURES / "transfer" / "sst2.jsonl"),
    "SST2_TRANSFER_SET_AUG": str(DISTILLATION_FIXTURES / "transfer" / "sst2_aug.jsonl"),
    "SICK_TRANSFER_SET": str(DISTILLATION_FIXTURES / "transfer" / "sick.jsonl"),
    "SICK_TRANSFER_SET_AUG": str(DISTILLATION_FIXTURES / "transfer" / "sick_aug.jsonl"),
}


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (see tests/conftest.py)."""
    yield


@pytest.fixture(scope="module")
def teacher_archive() -> str:
    """The tiny fixture teacher's archive (tests/distillation/teacher_archive.py)."""
    from tests.distillation.teacher_archive import fixture_teacher_archive

    return fixture_teacher_archive()
