"""
Shared, session-scoped artefacts of the bad-input suite (`docs/bad_inputs.md` lists every case):
the fixture dense LMs (shared with the tagging tests in the same process) and one LD-Net tagger
trained for one epoch on the CoNLL-03 fixture.
"""

import json
from pathlib import Path
from typing import Dict

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params

from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.tagging.lm_archives import fixture_lm_archives

CONLL03_TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
CONLL03_DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models run faster on one thread on the shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def lm_archives() -> Dict[str, str]:
    """{"forward": archive, "backward": archive}: the tiny fixture dense LMs."""
    return fixture_lm_archives()


@pytest.fixture(scope="session")
def data_ext_vars(lm_archives) -> Dict[str, str]:
    return {
        "CONLL03_TRAIN_DATA_PATH": CONLL03_TRAIN,
        "CONLL03_DEV_DATA_PATH": CONLL03_DEV,
        "CONLL03_TEST_DATA_PATH": CONLL03_DEV,
        "FORWARD_LM_ARCHIVE": lm_archives["forward"],
        "BACKWARD_LM_ARCHIVE": lm_archives["backward"],
    }


@pytest.fixture(scope="session")
def ldnet_run(tmp_path_factory, data_ext_vars) -> Path:
    """Serialization dir of `ner_ldnet.jsonnet` trained 1 epoch on the fixture (masks all 1)."""
    directory = tmp_path_factory.mktemp("bad_input_ldnet") / "run"
    overrides = {
        "trainer.num_epochs": 1,
        "trainer.callbacks": [{"type": "console_logger", "should_log_inputs": False}],
    }
    params = Params.from_file(
        str(CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet"),
        ext_vars=data_ext_vars,
        params_overrides=json.dumps(overrides),
    )
    train_model(params, str(directory))
    return directory
