"""
Tiny forward and backward dense-LM archives (the fixture LM config `fixtures/lm/dense_lm.jsonnet`:
3 dense layers of 4 over 6-d words) trained on `fixtures/lm/`, built once per test process and
shared by the tagging tests (and anyone else who needs LD-Net features on fixtures).

    from tests.tagging.lm_archives import fixture_lm_archives
    archives = fixture_lm_archives()   # {"forward": path, "backward": path}

(`tests/configs_test.py` gets its FORWARD_LM_ARCHIVE / BACKWARD_LM_ARCHIVE from
`tests/elmo/lm_archives.py`, which trains the same config at the real LMs' widths.)
"""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Dict

from tests.elmo.lm_archives import train_lm_archive


@functools.lru_cache(maxsize=None)
def fixture_lm_archives() -> Dict[str, str]:
    """{"forward": archive, "backward": archive}, trained once per process (seeded)."""
    directory = Path(tempfile.mkdtemp(prefix="ldnet_fixture_lms_"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return {d: train_lm_archive(directory, d) for d in ("forward", "backward")}


def lm_archive_ext_vars(_scratch: Path = None) -> Dict[str, str]:
    """{"FORWARD_LM_ARCHIVE": ..., "BACKWARD_LM_ARCHIVE": ...} of `fixture_lm_archives()`."""
    archives = fixture_lm_archives()
    return {"FORWARD_LM_ARCHIVE": archives["forward"], "BACKWARD_LM_ARCHIVE": archives["backward"]}
