"""
Where the studies find their data, and the machine they ran on. Real data lives outside the
repository, in `LDNET_SHARED_DATA` (default: `../shared/data` beside the checkout); each data
set can be pointed elsewhere by its own variable.
"""

import os
import platform
from itertools import groupby
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

ROOT = Path(__file__).resolve().parent.parent.parent
# the shared data folder (never copied into the repo); configs read it through these variables
DATA = Path(os.environ.get("LDNET_SHARED_DATA", ROOT.parent / "shared" / "data"))
LM_DIRECTIONS = ("forward", "backward")  # the biLM's two LMs, in the order everything uses
CONLL03 = {
    "CONLL03_TRAIN_DATA_PATH": str(DATA / "conll2003" / "eng.train"),
    "CONLL03_DEV_DATA_PATH": str(DATA / "conll2003" / "eng.testa"),
    "CONLL03_TEST_DATA_PATH": str(DATA / "conll2003" / "eng.testb"),
}
CONLL00 = {
    "CONLL00_TRAIN_DATA_PATH": str(DATA / "conll2000" / "train.txt"),
    "CONLL00_TEST_DATA_PATH": str(DATA / "conll2000" / "test.txt"),
}


class MissingData(SystemExit):
    """A data file or folder is not where its variable (or the default) says."""


def data_path(variable: str, default: Union[str, Path], must_exist: bool = True) -> Path:
    """
    The path in environment variable `variable`, else `default` (relative defaults are under
    `DATA`). With `must_exist`, a missing path stops the study with a message naming the
    variable to set.
    """
    path = Path(os.environ.get(variable) or DATA / default)
    if must_exist and not path.exists():
        raise MissingData(
            f"{path} is not there: set {variable} (or LDNET_SHARED_DATA, the folder holding "
            "the shared data sets)"
        )
    return path


def read_conll(path: Union[str, Path]) -> List[Tuple[List[str], List[str]]]:
    """(words, tags) of each sentence of a CoNLL file: the first and last columns of each run of
    lines that are neither blank nor -DOCSTART-."""
    rows = [line.split() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    runs = groupby(rows, key=lambda parts: bool(parts) and parts[0] != "-DOCSTART-")
    sentences = [list(run) for in_sentence, run in runs if in_sentence]
    return [([parts[0] for parts in s], [parts[-1] for parts in s]) for s in sentences]


def read_sentences(path: Union[str, Path]) -> List[List[str]]:
    """The words of each sentence of a CoNLL file (`read_conll`)."""
    return [words for words, _ in read_conll(path)]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` says."""
    try:
        with open("/proc/cpuinfo") as info:
            names = [
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            ]
    except OSError:
        names = []
    return names[0] if names else platform.processor() or platform.machine()


def hardware(torch_threads: Optional[int] = None) -> Dict[str, Any]:
    """The machine a figure was measured on (CPU model, cores, torch threads, load)."""
    import torch

    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch_threads is None else torch_threads,
        "torch": torch.__version__,
        "gpu": "none (CPU only)",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
