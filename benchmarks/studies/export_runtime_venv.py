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
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import RESULTS_DIR, command_line, utc_date, write_results
from benchmarks.harness.timing import interleaved, thread_env
from benchmarks.studies import export_timing as timing

LOCK = ROOT / "requirements" / "runtime-lock.txt"
VENV_DIR = ROOT / "runs" / "runtime_venv"
# the torch-free install's goals
GOAL = {
    "runtime_venv_mb": 500.0,
    "cold_start_s_runtime_venv_tokens": 0.5,
    "cold_start_s_runtime_venv_text": 1.0,
}
# what this stage writes into export.json (the `measure` stage carries them over)
KEYS = ("runtime_venv", *GOAL)


def install_commands(venv: Path, source: Path) -> List[List[str]]:
    """The commands that make the runtime's venv at `venv` from the lock and `source` (a copy
    of `ldnet_runtime/`)."""
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    return [
        [sys.executable, "-m", "venv", str(venv)],
        pip + ["-r", str(LOCK), str(source)],
    ]


def build_runtime_venv(venv: Path) -> Path:
    """
    A fresh venv at `venv` with the runtime's lock and the `ldnet-runtime` distribution.

    # Parameters

    venv : `Path`
        The venv's folder (replaced if it exists).

    # Returns

    The venv's `python`.
    """
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
    total = 0
    for folder, _, files in os.walk(venv):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total / 1e6


def imports_torch(python: Path) -> bool:
    """Whether `import torch` succeeds in `python` (run outside the repository)."""
    process = subprocess.run([str(python), "-c", "import torch"], cwd=python.parent)
    return process.returncode == 0


def cold_start(python: Path, export_dir: Path, json_input: Dict[str, Any], threads: int) -> float:
    """Seconds from starting `python -c RUNTIME_COLD` (outside the repository) to its first
    tagged sentence."""
    args = [str(python), "-c", timing.RUNTIME_COLD, str(export_dir), json.dumps(json_input)]
    started = time.time()
    process = subprocess.run(
        [*args, str(threads)],
        cwd=python.parent,
        env=thread_env(threads),
        capture_output=True,
        text=True,
    )
    if process.returncode != 0:
        raise SystemExit(f"cold start in the runtime's venv failed:\n{process.stderr[-3000:]}")
    return float(process.stdout.splitlines()[-1].split(" ", 1)[0]) - started


def run(args: argparse.Namespace) -> None:
    """Steps 1-3 of the module docstring; merges the figures into `--output`."""
    command = command_line()
    export_dir = (ROOT / args.export_dir).resolve()
    if not (export_dir / "tagger.json").is_file():
        timing.export_tagger(args.archive, args.export_dir, args.threads)
    started = time.perf_counter()
    python = build_runtime_venv(VENV_DIR)
    install_seconds = time.perf_counter() - started
    if imports_torch(python):
        raise SystemExit(f"{python}: `import torch` succeeds in the runtime's venv")
    runs = timing.cold_runs(str(export_dir), args.archive)
    inputs = {"tokens": runs["runtime_tokens"][2], "text": runs["runtime"][2]}
    cases = {
        name: (lambda json_input=json_input: cold_start(python, export_dir, json_input, 1))
        for name, json_input in inputs.items()
    }
    cold = interleaved(cases, args.rounds, warmup=0, self_timed=True)
    figures = {
        "runtime_venv_mb": round(venv_megabytes(VENV_DIR), 1),
        "cold_start_s_runtime_venv_tokens": cold.median("tokens"),
        "cold_start_s_runtime_venv_text": cold.median("text"),
    }
    record = {
        "command": command,
        "date": utc_date(),
        "hardware": dict(hardware(), load_average_at_end=list(os.getloadavg())),
        "install": [
            " ".join(c) for c in install_commands(VENV_DIR, Path("<copy of ldnet_runtime>"))
        ],
        "install_seconds": round(install_seconds, 1),
        "import_torch_fails": True,
        "export_dir": args.export_dir,
        "cold_start_inputs": inputs,
        "cold_start_script": "export_timing.RUNTIME_COLD in the venv's python, 1 thread",
        "cold_start_s_rounds": {case: cold.values(case) for case in cold.samples},
        "rounds": args.rounds,
        "goal": GOAL,
        "goal_met": {
            key: figures[key] <= goal if key == "runtime_venv_mb" else figures[key] < goal
            for key, goal in GOAL.items()
        },
    }
    output = Path(args.output) if args.output else RESULTS_DIR / "export.json"
    write_results(output, dict(figures, runtime_venv=record))
    print(json.dumps(figures, indent=1))
