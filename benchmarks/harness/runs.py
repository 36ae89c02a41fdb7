"""
Run directories: what a study trains or writes goes under `runs/<study>/...` (ignored by git),
with the settings its outputs depend on (`pin_settings`) and the time of the work done there
(`timed_once`); `trained` says whether an `allennlp train` run finished in one.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Optional

from benchmarks.harness.results import load_results, write_results
from benchmarks.harness.timing import wall_clock
from ldnet_allennlp.training.finished import trained  # noqa: F401  (for the studies)


def pin_settings(directory: Path, settings: Dict[str, Any], name: str = "settings") -> None:
    """
    Records the settings `directory`'s outputs depend on in `<directory>/<name>.json`, and stops
    a run whose settings differ from the recorded ones (its outputs would be mixed with theirs).
    """
    path = directory / f"{name}.json"
    pinned = load_results(path)
    changed = {k: (pinned[k], v) for k, v in settings.items() if k in pinned and pinned[k] != v}
    if changed:
        raise SystemExit(
            f"{directory} was made with other settings (recorded, given): {changed}; "
            "use a fresh run directory or the recorded settings"
        )
    write_results(path, settings)


def timed_once(directory: Path, name: str, work: Callable[[], bool]) -> Optional[float]:
    """
    Runs `work` (which returns whether it did anything, False when its outputs were there) and
    returns its wall seconds. The time of a run that did work is kept in
    `<directory>/stage_seconds.json`, so a later run that skips the finished work returns the
    recorded time (None if there is none).
    """
    record = directory / "stage_seconds.json"
    seconds = []
    with wall_clock(seconds.append):
        did_work = work()
    if did_work:  # merged under the folder's lock: runs of one directory may finish side by side
        write_results(record, {name: round(seconds[0], 1)})
    return load_results(record).get(name)
