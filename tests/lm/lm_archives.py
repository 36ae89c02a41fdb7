"""
Tiny forward/backward dense-LM archives trained on `fixtures/lm/` (a second or two each), for
every test that needs LM features:

- `fixture_lm_archives()`: the fixture LM config (3 dense layers of 4 over 6-d words), trained
  once per test process: `{"forward": path, "backward": path}`;
- `build_lm_archive_ext_vars(directory)`: `FORWARD_LM_ARCHIVE` / `BACKWARD_LM_ARCHIVE` at the
  real LMs' widths, for the training configs (`tests/configs_test.py`);
- `train_lm_archive(directory, direction, overrides)`: one more, e.g. of another vocabulary.
"""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Optional

from allennlp.commands.train import train_model
from allennlp.common import Params

from tests.conftest import FIXTURES_ROOT

LM_CONFIG = FIXTURES_ROOT / "lm" / "dense_lm.jsonnet"


def train_lm_archive(
    directory: Path, direction: str, overrides: Optional[Dict] = None, seed: int = 13
) -> str:
    """Trains the fixture LM in `direction` (1 epoch); returns the path of its archive."""
    changes = {
        "model.direction": direction,
        "train_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt"),
        "validation_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt"),
        "trainer.num_epochs": 1,
        "random_seed": seed,
        "numpy_seed": seed,
        "pytorch_seed": seed,
    }
    changes.update(overrides or {})
    params = Params.from_file(str(LM_CONFIG), params_overrides=changes)
    serialization_dir = Path(directory) / f"lm_{direction}"
    train_model(params, serialization_dir=str(serialization_dir))
    return str(serialization_dir / "model.tar.gz")


# The widths of the real LMs (training_configs/lm/dense_lm_{forward,backward}.jsonnet): 6 dense
# layers of 128 over 128-d words, so that configs sized for them (e.g. an encoder input_size that
# counts the 2 x 128 scalar-mix features) also run on the fixtures.
REAL_LM_SHAPE = {
    "model.text_field_embedder.token_embedders.tokens.embedding_dim": 128,
    "model.encoder.input_size": 128,
    "model.encoder.hidden_size": 128,
    "model.encoder.num_layers": 6,
}


_REAL_WIDTH_ARCHIVES: Dict[str, str] = {}


def build_lm_archive_ext_vars(directory: Path) -> Dict[str, str]:
    """
    `FORWARD_LM_ARCHIVE` / `BACKWARD_LM_ARCHIVE` for the training configs that load the dense
    LMs: fixture-trained LMs with the real LMs' layer widths (`REAL_LM_SHAPE`). Trained once per
    test session (later calls return the first archives; pytest keeps its tmp dirs meanwhile).
    """
    if not _REAL_WIDTH_ARCHIVES or not Path(_REAL_WIDTH_ARCHIVES["FORWARD_LM_ARCHIVE"]).exists():
        _REAL_WIDTH_ARCHIVES.update(
            FORWARD_LM_ARCHIVE=train_lm_archive(directory, "forward", REAL_LM_SHAPE),
            BACKWARD_LM_ARCHIVE=train_lm_archive(directory, "backward", REAL_LM_SHAPE),
        )
    return dict(_REAL_WIDTH_ARCHIVES)


def build_tiny_lm_archives(directory: Path) -> Dict[str, str]:
    """The fixture LMs as they are (3 layers of 4 over 6-d words: the widths differ)."""
    return {
        "FORWARD_LM_ARCHIVE": train_lm_archive(directory, "forward"),
        "BACKWARD_LM_ARCHIVE": train_lm_archive(directory, "backward"),
    }


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
