"""
The exports whose speeds the `speed` stage of the `export` study compares (`export_speed.py`):
each lever of the default export on or off (`EXPORTS`, `LEVERS`), made by `allennlp ldnet-export`
under `--speed-export-dir`, and the graph as the exporter of `--unfused-commit` wrote it, made by
that commit's own code; and the runtime's own code as it was at `--runtime-commit`
(`runtime_package_at`), on the default export.
"""

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import ROOT
from benchmarks.harness.timing import thread_env

# export name -> ldnet-export's options (None: the graph of `--unfused-commit`'s exporter)
EXPORTS: Dict[str, Any] = {
    "default": [],
    "fp32": ["--fp32"],
    "int8_no_tables": ["--no-word-tables"],
    "fp32_no_tables": ["--fp32", "--no-word-tables"],
    "unfused_int8": None,
    "unfused_fp32": None,
}
# case -> (the export it runs, onnxruntime's graph optimisation level in place of the
# runtime's `ORT_ENABLE_ALL`)
SESSION_VARIANTS = {"default_ort_basic": ("default", "ORT_ENABLE_BASIC")}
# case -> the export that `ldnet_runtime` as it was at `--runtime-commit` runs
RUNTIME_VARIANTS = {"default_runtime_before": "default"}
# lever -> (with it, without it): the words/s ratio is the lever's effect
LEVERS = {
    "int8": ("int8_no_tables", "fp32_no_tables"),
    "word_tables": ("default", "int8_no_tables"),
    "fused_graph": ("int8_no_tables", "unfused_int8"),
    "ort_enable_all": ("default", "default_ort_basic"),
    "runtime_code": ("default", "default_runtime_before"),
    "all": ("default", "unfused_fp32"),
}


def run_export(command: List[str], folder: str, cwd: Path = ROOT) -> List[str]:
    """`command` (an export into `folder`, relative to `cwd`) if `folder` holds no export yet;
    returns the command as recorded (`allennlp` for the venv's)."""
    if not (cwd / folder / "tagger.json").is_file():
        env = dict(thread_env(1), HF_HUB_OFFLINE="1", LDNET_PRETRAINED_DIR=str(ROOT / "pretrained"))
        process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise SystemExit(f"ldnet-export failed:\n{process.stderr[-3000:]}")
    return ["allennlp" if command[0] == ALLENNLP else "python", *command[1:]]


def unfused_exports(args: argparse.Namespace) -> Dict[str, str]:
    """The `unfused_*` exports, by `--unfused-commit`'s exporter (its `ldnet_allennlp` and
    `ldnet_runtime`, `git archive`d into runs/); returns each one's command."""
    source = ROOT / "runs" / f"exporter_{args.unfused_commit}"
    if not (source / "ldnet_allennlp").is_dir():
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "archive", args.unfused_commit, "ldnet_allennlp", "ldnet_runtime"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    commands = {}
    for name, fp32 in (("unfused_int8", []), ("unfused_fp32", ["--fp32"])):
        folder = str((ROOT / args.speed_export_dir / name).resolve())
        python = str(Path(ALLENNLP).parent / "python")
        archive = os.path.relpath(ROOT / args.archive, source)
        command = [python, "-m", "ldnet_allennlp", "ldnet-export", archive]
        command = run_export(
            command + ["-o", os.path.relpath(folder, source)] + fp32, folder, source
        )
        commands[name] = f"cd {source.relative_to(ROOT)} && " + " ".join(command)
    return commands


def make_exports(args: argparse.Namespace) -> Dict[str, str]:
    """Every export of `EXPORTS` under `--speed-export-dir`; their commands by name."""
    commands = unfused_exports(args)
    for name, options in EXPORTS.items():
        if options is not None:
            folder = f"{args.speed_export_dir}/{name}"
            command = [ALLENNLP, "ldnet-export", args.archive, "-o", folder, *options]
            commands[name] = " ".join(run_export(command, folder))
    return {name: commands[name] for name in EXPORTS}


def runtime_package_at(commit: str) -> ModuleType:
    """
    `ldnet_runtime` as it was at git `commit`, imported beside today's as the package
    `ldnet_runtime_at_<commit>`: `git archive`d into runs/, its own imports renamed.
    """
    name = f"ldnet_runtime_at_{commit}"
    if name in sys.modules:
        return sys.modules[name]
    folder = ROOT / "runs" / "runtimes" / name
    if not (folder / "__init__.py").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        archive = subprocess.run(
            ["git", "archive", commit, "ldnet_runtime"], cwd=ROOT, capture_output=True, check=True
        )
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", str(folder.parent)], input=archive.stdout, check=True)
        (folder.parent / "ldnet_runtime").rename(folder)
        for source in folder.rglob("*.py"):
            text = re.sub(r"\bldnet_runtime\b", name, source.read_text(encoding="utf-8"))
            source.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package
