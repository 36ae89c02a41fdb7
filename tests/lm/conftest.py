import pytest

from tests.lm.lm_archives import build_lm_archive_ext_vars, build_tiny_lm_archives


@pytest.fixture(scope="session")
def lm_archives(tmp_path_factory):
    """`{"FORWARD_LM_ARCHIVE": ..., "BACKWARD_LM_ARCHIVE": ...}` of tiny fixture LMs."""
    return build_tiny_lm_archives(tmp_path_factory.mktemp("elmo_lms"))


@pytest.fixture(scope="session")
def real_width_lm_archives(tmp_path_factory):
    """Fixture-trained LMs with the real LMs' widths (what the training configs are sized for)."""
    return build_lm_archive_ext_vars(tmp_path_factory.mktemp("elmo_real_width_lms"))
