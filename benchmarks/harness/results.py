"""Results files: one JSON object per study under `benchmarks/results/`, written only by
`write_results`; each records the command(s), hardware and date that made it (`run_record`)."""

import datetime
import fcntl
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Union

from benchmarks.harness.data import ROOT, hardware

RESULTS_DIR = ROOT / "benchmarks" / "results"

Updates = Union[Dict[str, Any], Callable[[Dict[str, Any]], Dict[str, Any]]]


def results_path(name: Union[str, Path], directory: Optional[Path] = None) -> Path:
    """`<directory or RESULTS_DIR>/<name>`, ".json" added when `name` has no suffix; a `Path`
    is taken as it is."""
    if isinstance(name, Path):
        return name
    file_name = name if name.endswith(".json") else f"{name}.json"
    return (RESULTS_DIR if directory is None else directory) / file_name


def load_results(name: Union[str, Path], directory: Optional[Path] = None) -> Dict[str, Any]:
    """The results file `name` ("pruning", "pruning.json" or a path), or {} if it is not there
    yet. No lock: `write_results` replaces files atomically."""
    path = results_path(name, directory)
    return json.loads(path.read_text()) if path.exists() else {}


def write_results(
    name: Union[str, Path],
    updates: Updates,
    directory: Optional[Path] = None,
    *,
    replace: bool = False,
    since: Optional[Dict[str, Any]] = None,
    finish: Optional[Callable[[Dict[str, Any]], None]] = None,
) -> Dict[str, Any]:
    """
    Writes the results file `name` (as `results_path` finds it) and returns what it wrote.

    Under an exclusive lock on the file's folder the file is read afresh and `updates` (a
    dict, or a callable that gets the current results and returns one) applied:

    - by default, merged into the file key by key (top level);
    - with `replace`, the file becomes `updates`;
    - with `since` (the results as this run loaded them), only the changes from `since` to
      `updates` are applied, recursively, so keys that other runs wrote meanwhile stay
      (`_merge_changes`).

    `finish` may then recompute derived keys in place; the file is replaced atomically (a
    temporary file renamed), so a reader sees the old or the new file.
    """
    path = results_path(name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)  # on the folder itself: no lock file
        results = json.loads(path.read_text()) if path.exists() else {}
        new = updates(results) if callable(updates) else updates
        if since is not None:
            results = _merge_changes(results, since, json.loads(json.dumps(new)))
        elif replace:
            results = dict(new)
        else:
            results.update(new)
        if finish is not None:
            finish(results)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)
    finally:
        os.close(folder)  # closing releases the lock
    return results


def _merge_changes(current: Any, before: Any, after: Any) -> Any:
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
                merged[key] = _merge_changes(current.get(key), before[key], value)
        for key in before:
            if key not in after:
                merged.pop(key, None)
        return merged
    if isinstance(after, list) and isinstance(before, list) and isinstance(current, list):
        removed = [item for item in before if item not in after]
        added = [item for item in after if item not in before and item not in current]
        return [item for item in current if item not in removed] + added
    return after


def command_line(argv: Optional[Sequence[str]] = None) -> str:
    """The command that is running, as `python -m benchmarks ...` (shell-quoted arguments)."""
    arguments = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m benchmarks", *(shlex.quote(a) for a in arguments)])


def utc_date() -> str:
    """Now, in UTC, to the second (ISO 8601)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_record(
    command: Optional[str] = None, machine: Optional[Dict[str, Any]] = None, **extra: Any
) -> Dict[str, Any]:
    """
    What a figure's file records about the run that produced it: `command` (by default the one
    running), `date` (UTC) and `hardware` (by default `hardware()` now; given `machine`, the
    `hardware()` taken at the run's start, with the load average now, at its end), plus any
    `extra` keys (e.g. `part="speed"`). A file written by several runs keeps a list of them:
    `results.setdefault("commands", []).append(run_record(...))`.
    """
    if machine is not None:
        machine = dict(machine, load_average_at_end=[round(x, 2) for x in os.getloadavg()])
    record = {"command": command or command_line(), "date": utc_date()}
    record.update(hardware=machine or hardware(), **extra)
    return record
