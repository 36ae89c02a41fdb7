"""
Results files: one JSON object per study under `benchmarks/results/`, written atomically, and
read-modify-written under a lock when several runs of a study write side by side. Each figure's
file records the command(s) that produced it, the hardware and the date (`run_record`).
"""

import contextlib
import datetime
import fcntl
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from benchmarks.harness.data import ROOT, hardware

RESULTS_DIR = ROOT / "benchmarks" / "results"

Updates = Union[Dict[str, Any], Callable[[Dict[str, Any]], Dict[str, Any]]]


def results_path(name: str, directory: Optional[Path] = None) -> Path:
    """`<directory or RESULTS_DIR>/<name>`, ".json" added when `name` has no suffix."""
    file_name = name if name.endswith(".json") else f"{name}.json"
    return (RESULTS_DIR if directory is None else directory) / file_name


def load_results(name: str, directory: Optional[Path] = None) -> Dict[str, Any]:
    """The results file `name` ("pruning" or "pruning.json"), or {} if it does not exist yet."""
    path = results_path(name, directory)
    return json.loads(path.read_text()) if path.exists() else {}


def save_results(name: str, results: Dict[str, Any], directory: Optional[Path] = None) -> None:
    """Replaces the results file `name` with `results` (atomically)."""
    path = results_path(name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomically(path, results)


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

    # Parameters

    name : `str`
        The results file, "distillation" or "distillation.json".
    directory : `Optional[Path]`
        Its folder; by default `RESULTS_DIR` as it is when the file is read or written.
    """

    def __init__(self, name: str, directory: Optional[Path] = None) -> None:
        self.name = name
        self.directory = directory
        self._before: Dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return results_path(self.name, self.directory)

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


def command_line(argv: Optional[Sequence[str]] = None) -> str:
    """The command that is running, as `python -m benchmarks ...` (shell-quoted arguments)."""
    arguments = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m benchmarks", *(shlex.quote(a) for a in arguments)])


def utc_date() -> str:
    """Now, in UTC, to the second (ISO 8601)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_record(command: Optional[str] = None, **extra: Any) -> Dict[str, Any]:
    """
    What a figure's file records about the run that produced it: `command` (by default the one
    running), `date` (UTC) and `hardware`, plus any `extra` keys (e.g. `part="speed"`).
    """
    record = {"command": command or command_line(), "date": utc_date(), "hardware": hardware()}
    record.update(extra)
    return record


def record_run(results: Dict[str, Any], key: str = "commands", **record: Any) -> Dict[str, Any]:
    """
    Appends a `run_record(**record)` to the list `results[key]` (created if absent), so that a
    file written by several runs keeps each one's command, date and hardware. Returns the record.
    """
    entry = run_record(**record)
    runs: List[Dict[str, Any]] = results.setdefault(key, [])
    runs.append(entry)
    return entry
