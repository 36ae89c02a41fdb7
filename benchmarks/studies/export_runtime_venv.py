"""
The `runtime_venv` stage of the `export` study: the torch-free install.

1. A fresh venv (`python -m venv runs/runtime_venv`) gets `pip install -r
   requirements/runtime-lock.txt` plus the `ldnet-runtime` distribution (`ldnet_runtime/
   pyproject.toml`, built from a copy of the folder), as the README says; pip may use its cache.
   `import torch` must fail in it.
2. Its size: the bytes of every file under the venv (symlinks not followed), in MB (10^6 bytes):
   `runtime_venv_mb`.
3. Cold start: a new process of the venv's Python (run outside the repository, so that it
   imports the installed package), from its start to the first tagged sentence of the study's
   export (`--export-dir`, made by the `measure` stage, else exported here), given
   pre-tokenised input (`cold_start_s_runtime_venv_tokens`: numpy and onnxruntime only) and raw
   text (`cold_start_s_runtime_venv_text`: spaCy's tokenizer loaded as well); the median of
   `--rounds` interleaved runs of both (`export_timing.RUNTIME_COLD`).

The figures are merged into export.json (`write_results`) with their command under
`runtime_venv`; the `measure` stage keeps them when it rewrites the file.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, utc_date, write_results
from benchmarks.studies import export_timing as timing

LOCK = ROOT / "requirements" / "runtime-lock.txt"
VENV_DIR = ROOT / "runs" / "runtime_venv"
# the torch-free install's goals: the size at most, the cold starts below
GOAL = {
    "runtime_venv_mb": 500.0,
    "cold_start_s_runtime_venv_tokens": 0.5,
    "cold_start_s_runtime_venv_text": 1.0,
}
SIGNS = dict(dict.fromkeys(GOAL, "<"), runtime_venv_mb="<=")
# what this stage writes into export.json (the `measure` stage carries them over)
KEYS = ("runtime_venv", *GOAL)


def install_commands(venv: Path, source: Path) -> List[List[str]]:
    """The commands that make the runtime's venv at `venv` from the lock and `source` (a copy
    of `ldnet_runtime/`)."""
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    return [[sys.executable, "-m", "venv", str(venv)], pip + ["-r", str(LOCK), str(source)]]


def build_runtime_venv(venv: Path) -> Path:
    """A fresh venv at `venv` (replaced if it exists) with the runtime's lock and the
    `ldnet-runtime` distribution; returns the venv's `python`."""
    shutil.rmtree(venv, ignore_errors=True)
    source = venv.with_name(venv.name + "_source") / "ldnet_runtime"
    shutil.rmtree(source.parent, ignore_errors=True)
    shutil.copytree(ROOT / "ldnet_runtime", source, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    for command in install_commands(venv, source):
        process = subprocess.run(command, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{process.stderr[-3000:]}")
    shutil.rmtree(source.parent, ignore_errors=True)
    return venv / "bin" / "python"


def venv_megabytes(venv: Path) -> float:
    """The bytes of the files under `venv` (symlinks not followed), in MB (10^6 bytes)."""
    paths = [Path(folder) / name for folder, _, names in os.walk(venv) for name in names]
    return sum(path.stat().st_size for path in paths if not path.is_symlink()) / 1e6


def imports_torch(python: Path) -> bool:
    """Whether `import torch` succeeds in `python` (run outside the repository)."""
    process = subprocess.run([str(python), "-c", "import torch"], cwd=python.parent)
    return process.returncode == 0


def run(args: argparse.Namespace) -> None:
    """Steps 1-3 of the module docstring; merges the figures into `--output`."""
    command = command_line()
    export_dir = str((ROOT / args.export_dir).resolve())
    timing.export_tagger(args.archive, export_dir, fresh=False)  # unless the export is there
    started = time.perf_counter()
    python = build_runtime_venv(VENV_DIR)
    install_seconds = time.perf_counter() - started
    if imports_torch(python):
        raise SystemExit(f"{python}: `import torch` succeeds in the runtime's venv")
    runs = timing.cold_runs(export_dir, args.archive)
    inputs = {"tokens": runs["runtime_tokens"][2], "text": runs["runtime"][2]}
    runs = {name: ("RUNTIME_COLD", export_dir, json_input) for name, json_input in inputs.items()}
    cold = timing.cold_starts(runs, args.rounds, 1, python, python.parent)
    figures = {
        "runtime_venv_mb": round(venv_megabytes(VENV_DIR), 1),
        "cold_start_s_runtime_venv_tokens": cold.median("tokens"),
        "cold_start_s_runtime_venv_text": cold.median("text"),
    }
    install = install_commands(VENV_DIR, Path("<copy of ldnet_runtime>"))
    record = {
        "command": command,
        "date": utc_date(),
        "hardware": dict(hardware(), load_average_at_end=list(os.getloadavg())),
        "install": [" ".join(c) for c in install],
        "install_seconds": round(install_seconds, 1),
        "import_torch_fails": True,
        "export_dir": args.export_dir,
        "cold_start_inputs": inputs,
        "cold_start_script": "export_timing.RUNTIME_COLD in the venv's python, 1 thread",
        "cold_start_s_rounds": {case: cold.values(case) for case in cold.samples},
        "rounds": args.rounds,
        "goal": GOAL,
        "goal_met": timing.goals_met(figures, GOAL, SIGNS),
    }
    write_results(Path(args.output), dict(figures, runtime_venv=record))
    print(json.dumps(figures, indent=1))
