"""
Whether `allennlp train` finished in a serialization directory, for scripts that skip finished
runs and resume the others with `--recover`:

    python -m ldnet_allennlp.training.finished SERIALIZATION_DIR   # exit 0: finished
"""

import sys
from pathlib import Path
from typing import Union


def trained(serialization_dir: Union[str, Path]) -> bool:
    """
    Whether `allennlp train` finished in `serialization_dir`. A run stopped before its last epoch
    (SIGTERM, Ctrl-C) also leaves a `model.tar.gz`, of its best epoch so far, but no
    `metrics.json`; that archive is moved aside to `model_interrupted.tar.gz`, so that the run is
    resumed (`--recover` from its last checkpoint) instead of being taken as trained.
    """
    serialization_dir = Path(serialization_dir)
    archive = serialization_dir / "model.tar.gz"
    interrupted = not (serialization_dir / "metrics.json").exists() and any(
        serialization_dir.glob("training_state_e*")
    )
    if archive.exists() and interrupted:
        archive.rename(serialization_dir / "model_interrupted.tar.gz")
        print(f"[{serialization_dir.name}] stopped before its last epoch: resuming with --recover")
        return False
    return archive.exists()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m ldnet_allennlp.training.finished SERIALIZATION_DIR")
    sys.exit(0 if trained(sys.argv[1]) else 1)
