"""
The names the scripts not yet converted to `benchmarks/studies/` import, re-exported from
`benchmarks.harness`; this module goes once no script imports it. `RESULTS_DIR` here is read
when a file is loaded or saved, so a test may point it elsewhere.
"""

from pathlib import Path
from typing import Any, Dict

from benchmarks.harness import results as _results
from benchmarks.harness.allennlp import ALLENNLP, duration_seconds, run_allennlp  # noqa: F401
from benchmarks.harness.data import (  # noqa: F401
    CONLL00,
    CONLL03,
    DATA,
    ROOT,
    hardware,
    read_sentences,
)
from benchmarks.harness.results import (  # noqa: F401
    Updates,
    folder_lock,
    merge_changes,
    update_results_file,
    write_json_atomically,
)
from ldnet_allennlp.training.finished import trained  # noqa: F401  (the benchmarks' import)

RESULTS_DIR = ROOT / "benchmarks" / "results"


def load_results(name: str) -> Dict[str, Any]:
    """`RESULTS_DIR/<name>.json`, or {} if it does not exist yet."""
    return _results.load_results(name, RESULTS_DIR)


def save_results(name: str, results: Dict[str, Any]) -> None:
    _results.save_results(name, results, RESULTS_DIR)


class SharedResults(_results.SharedResults):
    """`benchmarks.harness.results.SharedResults` in this module's `RESULTS_DIR`."""

    @property
    def path(self) -> Path:
        return _results.results_path(self.name, RESULTS_DIR)
