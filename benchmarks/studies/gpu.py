"""
Training where users train, with `training_configs/tagging/ner_ldnet.jsonnet` over the shipped
LMs on CoNLL-03: every training path on the fixtures on `--device` (stage `paths`), the config's
epoch there (`epoch`), a training step's time by part (`profile`), and the epoch on one CPU
thread in `--rounds` interleaved rounds, each in a new process (`cpu`). With `--baseline REF`,
`profile` and `cpu` also run the package at git `REF` (a worktree under `--work-dir`), each round
in a new process.
`--fixtures` is a dry run on the fixture CoNLL files and the `paths` stage's LMs; `--fixture-lms`
runs CoNLL-03 over those LMs, which have the shipped LMs' layers and cost. Writes `gpu.json` (in
`--results-dir`, by default benchmarks/results/).

    python -m benchmarks gpu --device cuda                       # a CUDA machine (make gpu-check)
    python -m benchmarks gpu --device cpu --fixtures --results-dir DIR   # the dry run CI does
    python -m benchmarks gpu --stage cpu --baseline REF          # the CPU epoch, REF against now
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from benchmarks.harness.data import CONLL03, ROOT, cpu_model, read_sentences
from benchmarks.harness.results import results_path, run_record, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, lookup
from benchmarks.harness.timing import interleaved, printed_rounds, thread_env

CONFIG = ROOT / "training_configs" / "tagging" / "ner_ldnet.jsonnet"
STEPS_SCRIPT = Path(__file__).with_name("gpu_steps.py")
# a headline figure (in gpu.json and its `cpu` section) -> the median of `run_epochs` it is
EPOCH_FIGURES = {
    "epoch_seconds_ner_ldnet": "median_seconds",
    "batches_per_sec_train": "median_train_batches_per_sec",
    "batches_per_sec_validation": "median_validation_batches_per_sec",
}
# the device run's figures: null in gpu.json until a run on a GPU measures them
DEVICE_FIGURES = ("device", "all_paths_ok", *EPOCH_FIGURES)
PRETRAINED_LMS = {
    "FORWARD_LM_ARCHIVE": str(ROOT / "pretrained" / "lm_forward.tar.gz"),
    "BACKWARD_LM_ARCHIVE": str(ROOT / "pretrained" / "lm_backward.tar.gz"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--fixtures", action="store_true", help="a dry run on the fixtures")
    parser.add_argument("--fixture-lms", action="store_true", help="the paths stage's LMs")
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the epoch stage")
    parser.add_argument("--profile-steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the cpu stage")
    parser.add_argument("--cpu-batches", type=int, help="training batches per cpu round")
    parser.add_argument("--baseline", default=None, help="git ref the cpu stage also times")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "gpu")
    parser.add_argument("--results-dir", type=Path, default=None)


def _save(args: argparse.Namespace, updates: Dict[str, Any]) -> None:
    def merge(results: Dict[str, Any]) -> Dict[str, Any]:
        unmeasured = {key: results.get(key) for key in DEVICE_FIGURES}
        runs = results.get("commands", []) + [run_record()]
        latest = {"title": "Training on a GPU", "commands": runs, "hardware": runs[-1]["hardware"]}
        return {**unmeasured, **latest, **updates}

    write_results(results_path("gpu.json", args.results_dir), merge)


def _cuda_device(args: argparse.Namespace) -> int:
    return 0 if args.device == "cuda" else -1


def _variables(args: argparse.Namespace) -> Dict[str, str]:
    """The config's variables: CoNLL-03 and the shipped LMs; with `--fixture-lms`, the `paths`
    stage's LMs instead (their shape and cost); with `--fixtures`, also the fixture data."""
    if not (args.fixtures or args.fixture_lms):
        return {**CONLL03, **PRETRAINED_LMS}
    from benchmarks.studies.gpu_paths import FIXTURE_DATA, Paths

    lms = {d: args.work_dir / "paths" / f"lm_{d}" / "model.tar.gz" for d in ("forward", "backward")}
    if not all(path.exists() for path in lms.values()):
        Paths(args.work_dir / "paths", _cuda_device(args)).lms()
    data = FIXTURE_DATA if args.fixtures else CONLL03
    return {**data, **{f"{d.upper()}_LM_ARCHIVE": str(path) for d, path in lms.items()}}


def _overrides(args: argparse.Namespace) -> Dict[str, Any]:
    """Batches of 4 on the fixtures (24 training sentences), so that there are rates to take."""
    return {"data_loader.batch_size": 4} if args.fixtures else {}


def _device(args: argparse.Namespace) -> Dict[str, Any]:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here (--device cpu?)")
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else cpu_model()
    return {"device": name, "device_type": args.device, "torch_version": torch.__version__}


def _trainer(args: argparse.Namespace, name: str, overrides: Dict[str, Any]):
    """The config's trainer in this process, on `--device`, under `--work-dir/<name>`."""
    import ldnet_allennlp  # noqa: F401
    from benchmarks.studies.gpu_steps import build_trainer

    changes, work_dir = {**overrides, **_overrides(args)}, args.work_dir / name
    return build_trainer(str(CONFIG), _variables(args), changes, work_dir, _cuda_device(args))


def paths(args: argparse.Namespace) -> None:
    import ldnet_allennlp  # noqa: F401
    from allennlp.common.plugins import import_plugins

    from benchmarks.studies.gpu_paths import Paths

    import_plugins()
    results = Paths(args.work_dir / "paths", _cuda_device(args)).all()
    ran = [result["ok"] for result in results.values() if result["ok"] is not None]
    _save(args, {**_device(args), "paths": results, "all_paths_ok": all(ran)})


def epoch(args: argparse.Namespace) -> None:
    from benchmarks.studies.gpu_steps import run_epochs

    overrides = {"trainer.num_epochs": args.epochs}
    figures = run_epochs(_trainer(args, "epoch", overrides))
    _save(args, {**_device(args), **_headline_figures(figures), "epochs": figures["epochs"]})


def _headline_figures(figures: Dict[str, Any]) -> Dict[str, Any]:
    return {key: figures.get(median) for key, median in EPOCH_FIGURES.items()}


def profile(args: argparse.Namespace) -> None:
    """Here, or with `--baseline`, the package now and at `REF`, each in a new process."""
    if args.baseline:
        steps, versions = args.profile_steps, _versions(args).items()
        figures = {name: _steps_process(args, name, path, steps)() for name, path in versions}
        _save(args, {"profile_cpu_against_baseline": {**_device(args), **figures}})
        return
    from benchmarks.studies.gpu_steps import profile_steps

    train_model = _trainer(args, "profile", {})
    _save(args, {"profile": {**_device(args), **profile_steps(train_model, args.profile_steps)}})


def cpu(args: argparse.Namespace) -> None:
    """One epoch on the CPU, one thread, per round and package version, each in a new process;
    its seconds are taken from its rates (`_epoch_from_rates`), the whole epoch's or those of the
    first `--cpu-batches` training batches and all of dev."""
    versions, batches = _versions(args).items(), args.cpu_batches
    cases = {name: _steps_process(args, name, path, 0, batches) for name, path in versions}
    progress = printed_rounds("[gpu cpu] epoch seconds", lambda s: f"{s['median_seconds']:.1f}")
    protocol = dict(warmup=0, order="alternate", threads=1, self_timed=True, on_round=progress)
    timings = interleaved(cases, args.rounds, **protocol)
    section: Dict[str, Any] = {"threads": 1, "device": cpu_model(), "rounds": args.rounds}
    for name in cases:
        section[name] = {key: timings.median(name, key) for key in EPOCH_FIGURES.values()}
        section[name]["per_round_seconds"] = timings.values(name, "median_seconds")
        section[name]["epoch_seconds_from_rates"] = _epoch_from_rates(args, timings, name)
    section.update(_headline_figures(section["now"]), batches_per_epoch_timed=batches)
    now = section["epoch_seconds_ner_ldnet"] = section["now"]["epoch_seconds_from_rates"]
    if args.baseline:
        before = section[f"baseline_{args.baseline}"]["epoch_seconds_from_rates"]
        section.update(epoch_seconds_before=before, epoch_speedup=before / now)
    _save(args, {"cpu": section})


def _epoch_from_rates(args: argparse.Namespace, timings, name: str) -> float:
    """A whole epoch's seconds from the rates of a whole or a partial one (`--cpu-batches`): the
    training file's batches over the median training rate plus the dev file's over the median
    validation rate."""
    batch_size, variables, seconds = 4 if args.fixtures else 32, _variables(args), 0.0
    for data, phase in (("TRAIN", "train"), ("DEV", "validation")):
        batches = -(-len(read_sentences(variables[f"CONLL03_{data}_DATA_PATH"])) // batch_size)
        seconds += batches / timings.median(name, f"median_{phase}_batches_per_sec")
    return seconds


def _versions(args: argparse.Namespace) -> Dict[str, Path]:
    """The package now, and at `--baseline` if given (a worktree under `--work-dir`, made once)."""
    if not args.baseline:
        return {"now": ROOT}
    git = ["git", "-C", str(ROOT)]
    sha = subprocess.check_output([*git, "rev-parse", "--short", args.baseline], text=True).strip()
    path = args.work_dir / f"baseline_{sha}"
    if not path.exists():
        subprocess.run([*git, "worktree", "add", "--detach", str(path), sha], check=True)
    return {"now": ROOT, f"baseline_{args.baseline}": path}


def _steps_process(
    args: argparse.Namespace, name: str, root: Path, steps: int, batches: Optional[int] = None
):
    """A self-timed case: `gpu_steps.py` in a new process with `root` first on the path
    (the script is copied out of the package so that its own folder shadows nothing), `steps`
    steps profiled or one epoch (of `batches` training batches) timed; the figures are those the
    process measured itself, as it cannot use this harness."""
    script, work = args.work_dir / "gpu_steps_script.py", args.work_dir / f"cpu_{name}"
    overrides = {"trainer.num_epochs": 1, **_overrides(args)}
    if batches:
        overrides["data_loader.batches_per_epoch"] = batches
    job = {"config": str(CONFIG), "ext_vars": _variables(args), "overrides": overrides}
    job.update(work_dir=str(work), profile_steps=steps)
    command = [sys.executable, str(script), json.dumps(job)]
    env = thread_env(1, dict(os.environ, PYTHONPATH=str(root)))

    def run() -> Dict[str, float]:
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(STEPS_SCRIPT.read_text())
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("GPU_STEPS_JSON ")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"{name}: gpu_steps.py failed:\n{done.stderr[-3000:]}")
        figures = json.loads(lines[-1].split(" ", 1)[1])
        if Path(figures["ldnet_allennlp"]).resolve() != (root / "ldnet_allennlp").resolve():
            raise SystemExit(f"{name}: ran {figures['ldnet_allennlp']}, not {root}")
        return figures

    return run


def summary(results: Dict[str, Any]) -> list:
    """The goals; a figure not measured yet (no GPU run, no CPU run) is shown open."""

    def goal(figure: str, key: str, bound: tuple) -> Headline:
        try:
            value = lookup(results, key)
        except KeyError:
            value = None
        return Headline(figure, value, key, bound[0], None if value is None else bound[1](value))

    return [
        goal("all training paths, GPU", "all_paths_ok", ("true", lambda value: value is True)),
        goal("NER epoch, GPU (s)", "epoch_seconds_ner_ldnet", at_most(15.0)),
        goal("training batches/s, GPU", "batches_per_sec_train", at_least(30.0)),
        goal("CPU epoch speed-up, 1 thread", "cpu.epoch_speedup", at_least(1.0)),
    ]


STUDY = Study(
    name="gpu",
    description="Training paths and the NER epoch on a GPU; the NER epoch on one CPU thread.",
    results_file="gpu.json",
    stages=[
        Stage("paths", paths, "every training path on the fixtures, on --device"),
        Stage("epoch", epoch, "ner_ldnet on CoNLL-03 for --epochs epochs, on --device"),
        Stage("profile", profile, "training steps by part, on --device"),
        Stage("cpu", cpu, "one epoch on one CPU thread, --rounds rounds (and --baseline)"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
