"""What every benchmark script shares: paths, the real-data variables, the `allennlp` command
line in a subprocess, results files and the hardware record."""

import contextlib
import fcntl
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

from ldnet_allennlp.training.finished import trained  # noqa: F401  (the benchmarks' import)

ROOT = Path(__file__).resolve().parent.parent
# the shared data folder (never copied into the repo); configs read it through these variables
DATA = Path(os.environ.get("LDNET_SHARED_DATA", ROOT.parent / "shared" / "data"))
RESULTS_DIR = ROOT / "benchmarks" / "results"
ALLENNLP = str(Path(sys.executable).with_name("allennlp"))
CONLL03 = {
    "CONLL03_TRAIN_DATA_PATH": str(DATA / "conll2003" / "eng.train"),
    "CONLL03_DEV_DATA_PATH": str(DATA / "conll2003" / "eng.testa"),
    "CONLL03_TEST_DATA_PATH": str(DATA / "conll2003" / "eng.testb"),
}
CONLL00 = {
    "CONLL00_TRAIN_DATA_PATH": str(DATA / "conll2000" / "train.txt"),
    "CONLL00_TEST_DATA_PATH": str(DATA / "conll2000" / "test.txt"),
}


def run_allennlp(
    args: List[str], log: Path, env: Optional[Dict[str, str]] = None, threads: int = 0
) -> None:
    """
    `allennlp <args> --include-package ldnet_allennlp` from the project root, offline, its output
    appended to `log`; `threads` > 0 sets OMP/MKL threads. A failure names the log.
    """
    if "--include-package" not in args:
        args = [*args, "--include-package", "ldnet_allennlp"]
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **(env or {}))
    if threads:
        full_env["OMP_NUM_THREADS"] = full_env["MKL_NUM_THREADS"] = str(threads)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(f"\n$ allennlp {' '.join(args)}\n")
        handle.flush()
        process = subprocess.run(
            [ALLENNLP, *args], cwd=ROOT, env=full_env, stdout=handle, stderr=subprocess.STDOUT
        )
    if process.returncode != 0:
        raise SystemExit(f"allennlp {args[0]} exited with {process.returncode}; see {log}")


def duration_seconds(text: str) -> float:
    """AllenNLP's `training_duration` (`str(datetime.timedelta)`: "[N day[s], ]H:MM:SS[.f]")."""
    days = 0
    if "day" in text:
        day_part, text = text.split(",", 1)
        days = int(day_part.split()[0])
    hours, minutes, seconds = text.strip().split(":")
    return days * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def load_results(name: str) -> Dict[str, Any]:
    """`benchmarks/results/<name>.json`, or {} if it does not exist yet."""
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save_results(name: str, results: Dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    write_json_atomically(RESULTS_DIR / f"{name}.json", results)


def write_json_atomically(path: Path, data: Dict[str, Any]) -> None:
    """Writes a temporary file beside `path`, then renames it: a reader sees the old or the new."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, path)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive `flock` on `folder` itself (no lock file), held for the `with` block."""
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


Updates = Union[Dict[str, Any], Callable[[Dict[str, Any]], Dict[str, Any]]]


def update_results_file(
    path: Path,
    updates: Updates,
    finish: Optional[Callable[[Dict[str, Any]], None]] = None,
    replace: bool = False,
) -> Dict[str, Any]:
    """
    Read-modify-write of a results file that parallel benchmark runs share: under a lock on its
    folder, the file is read afresh, `updates` merged in (a callable gets the current results
    and returns the updates; with `replace`, the whole new results), `finish` may recompute
    derived keys in place, and the file is replaced atomically. Returns what was written.
    """
    with folder_lock(path.parent):
        results = json.loads(path.read_text()) if path.exists() else {}
        new = updates(results) if callable(updates) else updates
        if replace:
            results = dict(new)
        else:
            results.update(new)
        if finish is not None:
            finish(results)
        write_json_atomically(path, results)
    return results


def merge_changes(current: Any, before: Any, after: Any) -> Any:
    """
    `current` (a file as it is now) with the changes from `before` to `after` (what one process
    read and what it holds now) applied: keys added, changed or removed, recursively in dicts;
    list items added or removed. What others wrote since `before` and this process left alone
    stays.
    """
    if isinstance(after, dict) and isinstance(before, dict) and isinstance(current, dict):
        merged = dict(current)
        for key, value in after.items():
            if key not in before:
                merged[key] = value
            elif value != before[key]:
                merged[key] = merge_changes(current.get(key), before[key], value)
        for key in before:
            if key not in after:
                merged.pop(key, None)
        return merged
    if isinstance(after, list) and isinstance(before, list) and isinstance(current, list):
        removed = [item for item in before if item not in after]
        added = [item for item in after if item not in before and item not in current]
        return [item for item in current if item not in removed] + added
    return after


class SharedResults:
    """
    A results file that runs of one benchmark may write side by side (e.g. one task each): a
    run `load`s it once, changes its dict, and each `save` writes only what this run changed
    since its last load or save, merged into the file as it is then, under the file's lock.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._before: Dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return RESULTS_DIR / f"{self.name}.json"

    def load(self) -> Dict[str, Any]:
        # no lock needed: writers replace the file atomically
        results = json.loads(self.path.read_text()) if self.path.exists() else {}
        self._before = json.loads(json.dumps(results))
        return results

    def save(
        self, results: Dict[str, Any], finish: Optional[Callable[[Dict[str, Any]], None]] = None
    ) -> Dict[str, Any]:
        """Writes this run's changes; `finish` recomputes derived keys on the merged file.
        Returns the file as written."""
        snapshot = json.loads(json.dumps(results))
        written = update_results_file(
            self.path,
            lambda current: merge_changes(current, self._before, snapshot),
            finish=finish,
            replace=True,
        )
        self._before = snapshot
        return written


def hardware() -> Dict[str, Any]:
    """The machine a figure was measured on (CPU model, cores, torch threads, load)."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "gpu": "none (CPU only)",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def read_sentences(path) -> List[List[str]]:
    """The words of each sentence of a CoNLL file (first column; -DOCSTART- lines skipped)."""
    sentences: List[List[str]] = []
    current: List[str] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(parts[0])
    if current:
        sentences.append(current)
    return sentences
