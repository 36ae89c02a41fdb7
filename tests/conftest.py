import os
from pathlib import Path

import pytest
import torch

from allennlp.common.plugins import import_plugins

import ldnet_allennlp  # noqa: F401  (registers our components, applies ldnet_allennlp.patches)
from tests.cudnn_rule import enforce_cudnn_rnn_rule

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_ROOT = PROJECT_ROOT / "fixtures"
CONFIGS_ROOT = PROJECT_ROOT / "training_configs"

# Nothing in the test suite may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# allennlp-models' components (crf_tagger, conll2003 reader, ...), as `allennlp` itself loads them
import_plugins()


@pytest.fixture(scope="session", autouse=True)
def cudnn_rnn_rule():
    """
    Every test runs under cuDNN's rule for RNNs (`tests/cudnn_rule.py`): a backward through an
    RNN that ran in eval mode raises, as it does on a GPU.
    """
    with enforce_cudnn_rnn_rule():
        yield


@pytest.fixture(scope="session")
def project_root() -> Path:
    return PROJECT_ROOT


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    return FIXTURES_ROOT


@pytest.fixture
def one_torch_thread():
    """Tiny models run several times faster on one thread on the shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
