import pytest

from tests.elmo.lm_archives import build_tiny_lm_archives


@pytest.fixture(scope="session")
def lm_archives(tmp_path_factory):
    """`{"FORWARD_LM_ARCHIVE": ..., "BACKWARD_LM_ARCHIVE": ...}` of tiny fixture LMs."""
    return build_tiny_lm_archives(tmp_path_factory.mktemp("elmo_lms"))
