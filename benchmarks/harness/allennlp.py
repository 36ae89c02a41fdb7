"""
The `allennlp` command line in a subprocess, as the studies call it: train (skipping finished
runs, resuming interrupted ones) and evaluate, each with its output in a log file.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from benchmarks.harness.data import ROOT
from benchmarks.harness.timing import thread_env
from ldnet_allennlp.training.finished import trained

ALLENNLP = str(Path(sys.executable).with_name("allennlp"))
Overrides = Union[str, Dict[str, Any], None]


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
        full_env.update(thread_env(threads, base={}))
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(f"\n$ allennlp {' '.join(args)}\n")
        handle.flush()
        process = subprocess.run(
            [ALLENNLP, *args], cwd=ROOT, env=full_env, stdout=handle, stderr=subprocess.STDOUT
        )
    if process.returncode != 0:
        raise SystemExit(f"allennlp {args[0]} exited with {process.returncode}; see {log}")


def _overrides(overrides: Overrides) -> List[str]:
    if not overrides:
        return []
    text = overrides if isinstance(overrides, str) else json.dumps(overrides, sort_keys=True)
    return ["-o", text]


def train(
    config: Union[str, Path],
    serialization_dir: Path,
    log: Path,
    overrides: Overrides = None,
    env: Optional[Dict[str, str]] = None,
    threads: int = 0,
) -> bool:
    """
    `allennlp train config -s serialization_dir`, unless the run finished there (`trained`). A
    serialization dir left by an interrupted run (it has a config.json) is continued with
    `--recover`; any other leftover is replaced (`-f`). Returns whether it trained.
    """
    if trained(serialization_dir):
        return False
    resume = ["--recover"] if (Path(serialization_dir) / "config.json").exists() else ["-f"]
    args = ["train", str(config), "-s", str(serialization_dir), *resume]
    run_allennlp(args + _overrides(overrides), log, env, threads=threads)
    return True


def evaluate(
    archive: Path,
    data: str,
    output: Path,
    log: Path,
    overrides: Overrides = None,
    env: Optional[Dict[str, str]] = None,
    threads: int = 0,
) -> Dict[str, Any]:
    """
    The metrics of `allennlp evaluate archive data --output-file output`. An evaluation of this
    very archive is reused: it runs again only if the archive is newer than `output`.
    """
    if not (output.exists() and output.stat().st_mtime >= Path(archive).stat().st_mtime):
        args = ["evaluate", str(archive), data, "--output-file", str(output)]
        run_allennlp(args + _overrides(overrides), log, env, threads=threads)
    return json.loads(output.read_text())


def duration_seconds(text: str) -> float:
    """AllenNLP's `training_duration` (`str(datetime.timedelta)`: "[N day[s], ]H:MM:SS[.f]")."""
    days = int(text.split()[0]) if "day" in text else 0
    hours, minutes, seconds = text.split()[-1].split(":")
    return days * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def epoch_metrics(serialization_dir: Path) -> List[Dict[str, Any]]:
    """AllenNLP's `metrics_epoch_<N>.json` of a run, in epoch order."""
    paths = Path(serialization_dir).glob("metrics_epoch_*.json")
    epochs = sorted(paths, key=lambda path: int(path.stem.split("_")[-1]))
    return [json.loads(path.read_text()) for path in epochs]


def training_seconds(serialization_dir: Path) -> Optional[float]:
    """
    AllenNLP's own clock summed over a run's training processes: each epoch's
    `training_duration` counts from the start of its process, so a process's time is the
    duration of its last epoch, and a resumed (`--recover`) process starts again from 0. None
    before the first epoch.
    """
    total, last = 0.0, None
    for metrics in epoch_metrics(serialization_dir):
        duration = duration_seconds(metrics["training_duration"])
        if last is not None and duration < last:  # a new process began
            total += last
        last = duration
    return None if last is None else total + last
