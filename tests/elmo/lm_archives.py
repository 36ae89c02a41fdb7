"""
Tiny forward/backward dense-LM archives trained on `fixtures/lm/` (a second or two each), for
the scalar-mix tests and for `tests/configs_test.py` (`build_lm_archive_ext_vars`).
"""

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
        "train_data_path": str(FIXTURES_ROOT / "lm" / "train.txt"),
        "validation_data_path": str(FIXTURES_ROOT / "lm" / "dev.txt"),
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


def build_lm_archive_ext_vars(directory: Path) -> Dict[str, str]:
    """`FORWARD_LM_ARCHIVE` / `BACKWARD_LM_ARCHIVE` for configs that load the dense LMs."""
    return {
        "FORWARD_LM_ARCHIVE": train_lm_archive(directory, "forward"),
        "BACKWARD_LM_ARCHIVE": train_lm_archive(directory, "backward"),
    }
