"""
The study interface: a study is a module of `benchmarks/studies/` that declares a `STUDY`, its
stages (run in order by `python -m benchmarks <study>`) and its summary, the headline figures
that `python -m benchmarks report` puts in BENCHMARKS.md.
"""

import argparse
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
# a key naming a superseded run: "earlier_phase1", "conll00_earlier_phase1", "previous_cpu_lms"
_SUPERSEDED = re.compile(r"(^|_)(earlier|previous)(_|$)")


@dataclass(frozen=True)
class Stage:
    """One step of a study, e.g. "train", "evaluate", "speed"; `run` gets the parsed arguments."""

    name: str
    run: Callable[[argparse.Namespace], None]
    help: str = ""


@dataclass(frozen=True)
class Headline:
    """
    One figure of a study's headline table in BENCHMARKS.md: what is measured (`figure`, e.g.
    "CoNLL-03 test F1, pruned to 2 layers"), its `value` as stored in the results JSON, read at
    the dotted path `key` (e.g. "conll03.test_f1" or "rows[0].f1") with `lookup`, never typed by
    hand; optionally the target (`goal`, e.g. ">= 91.0") and whether `value` meets it (`met`).
    """

    figure: str
    value: Any
    key: str
    goal: Optional[str] = None
    met: Optional[bool] = None


@dataclass(frozen=True)
class Study:
    """
    A benchmark study as the entry point and the report see it: its command-line `name`
    (`python -m benchmarks <name>`), a one-line `description` for `--help`, its `results_file`
    under `benchmarks/results/` (e.g. "pruning.json"), its `stages` (run in this order; `--stage`
    picks some), `add_arguments` (adds the study's own options to its sub-command) and
    `summary` (the headline figures, from the study's results).
    """

    name: str
    description: str
    results_file: str
    stages: Sequence[Stage]
    add_arguments: Optional[Callable[[argparse.ArgumentParser], None]] = None
    summary: Optional[Callable[[Dict[str, Any]], List[Headline]]] = None


def lookup(results: Any, key: str) -> Any:
    """
    The value at a dotted path of a results dict: "a.b.c", with list indices as "rows[2].f1".
    A `KeyError` (or `IndexError`) names the whole path when a step is missing.
    """
    value = results
    for name, index in _STEP.findall(key):
        try:
            value = value[int(index)] if index else value[name]
        except (KeyError, IndexError, TypeError) as error:
            raise KeyError(f"{key!r}: no {name or index!r} in the results") from error
    return value


def headline(
    results: Dict[str, Any],
    figure: str,
    key: str,
    goal: Optional[str] = None,
    met: Union[None, bool, Callable[[Any], bool]] = None,
) -> Headline:
    """
    A `Headline` whose value is read at `key`. `met` is a bool (e.g. read from the results
    too) or a test applied to the value; `at_least` and `at_most` give a goal and its test:

        headline(results, "CoNLL-03 test F1", "f1_pruned", *at_least(91.0))
    """
    value = lookup(results, key)
    if callable(met):
        met = bool(met(value))
    return Headline(figure, value, key, goal, met)


def at_least(bound: float, unit: str = "") -> Tuple[str, Callable[[Any], bool]]:
    """The goal ">= bound" and its test, for `headline`."""
    return f">= {bound:g}{unit}", lambda value: value >= bound


def at_most(bound: float, unit: str = "") -> Tuple[str, Callable[[Any], bool]]:
    """The goal "<= bound" and its test, for `headline`."""
    return f"<= {bound:g}{unit}", lambda value: value <= bound


def superseded(key: str) -> bool:
    """Whether a dotted JSON key lies in a superseded run (a step like `earlier_*`,
    `<task>_earlier_*` or `previous_*`); such runs are kept in the JSON, not reported."""
    return any(_SUPERSEDED.search(name) for name, _ in _STEP.findall(key))


# the keys under which results files record their date, in the order they are tried
DATE_KEYS = ("date", "started_utc", "started_at", "finished_utc")


def provenance(results: Dict[str, Any], path: Optional[Any] = None) -> Dict[str, Any]:
    """
    How a results file was made, whichever spelling it uses: "command" (a list of command lines,
    from "commands" as a list, a dict of parts or records with a "command", or from "command";
    each line once), "hardware" (a dict or text) and "date" (a date key, else the day git last
    committed `path`, else None). Each is searched at the top level, then one level down (e.g.
    per task), never in superseded runs (`superseded` keys).
    """
    current = {key: value for key, value in results.items() if not superseded(key)}
    sections = [current] + [v for v in current.values() if isinstance(v, dict)]
    found = (_command_lines(s.get(key)) for s in sections for key in ("commands", "command"))
    commands = list(dict.fromkeys(next((lines for lines in found if lines), [])))
    hardware = next((s["hardware"] for s in sections if "hardware" in s), None)
    date = next((s[k] for s in sections for k in DATE_KEYS if isinstance(s.get(k), str)), None)
    if date is None and path is not None:
        date = _last_commit_date(Path(path))
    return {"command": commands, "date": date, "hardware": hardware}


def _command_lines(value: Any) -> List[str]:
    """The command lines of a string, a list, a dict of parts or a record with a "command"."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = [value["command"]] if "command" in value else list(value.values())
    if isinstance(value, list):
        return [line for item in value for line in _command_lines(item)]
    return []


def _last_commit_date(path: Path) -> Optional[str]:
    """The day (YYYY-MM-DD) of the last commit that changed `path`, or None outside git."""
    command = ["git", "log", "-1", "--format=%as", "--", path.name]
    try:
        process = subprocess.run(command, cwd=path.parent, capture_output=True, text=True)
    except OSError:
        return None
    return process.stdout.strip() or None
