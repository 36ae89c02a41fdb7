"""
The tiny SST-2 teacher archive (`fixtures/distillation/teacher_sst2.jsonnet`: `basic_classifier`
over the random 2-layer, 16-d BERT in `fixtures/distillation/tiny_bert/`), trained once per test
process (1 epoch, AllenNLP's default seeds) and shared by the transfer-set tests, the online
teacher's tests and the config tests.

    from tests.distillation.teacher_archive import fixture_teacher_archive
    path = fixture_teacher_archive()   # .../model.tar.gz
"""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from allennlp.commands.train import train_model
from allennlp.common import Params

from tests.conftest import FIXTURES_ROOT

DISTILLATION_FIXTURES = FIXTURES_ROOT / "distillation"


@functools.lru_cache(maxsize=None)
def fixture_teacher_archive() -> str:
    """Path of the tiny teacher's `model.tar.gz` (labels "0"/"1"), trained at the first call."""
    directory = Path(tempfile.mkdtemp(prefix="ldnet_fixture_teacher_"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    params = Params.from_file(
        str(DISTILLATION_FIXTURES / "teacher_sst2.jsonnet"),
        ext_vars={"DISTILLATION_FIXTURES": str(DISTILLATION_FIXTURES)},
    )
    train_model(params, str(directory / "run"))
    return str(directory / "run" / "model.tar.gz")
