"""
Training where users train: every training path on a device, the NER recipe's epoch on it, where
a training step's time goes, and the same epoch on the CPU, one thread.

    python -m benchmarks gpu --device cuda                       # a CUDA machine (make gpu-check)
    python -m benchmarks gpu --device cpu --fixtures --results-dir DIR   # the dry run CI does
    python -m benchmarks gpu --stage cpu --baseline REF          # the CPU epoch, REF against now

Stages:
- `paths`: `gpu_paths.Paths` on the fixtures, on `--device`;
- `epoch`: `training_configs/tagging/ner_ldnet.jsonnet` over the shipped LMs on CoNLL-03 for
  `--epochs` epochs on `--device` (`gpu_steps.run_epochs`, the config's own trainer);
- `profile`: `--profile-steps` training steps of the same config by part (`gpu_steps`); with
  `--baseline REF` (on the CPU), those of the package now and at `REF`, each in a new process;
- `cpu`: one epoch of the same config on the CPU, one thread, in `--rounds` rounds (a fresh
  trainer each); with `--baseline REF`, interleaved with the package at git `REF` (a worktree
  under `runs/gpu/`), each round of each version in a new process.

With `--fixtures` every stage reads the fixture CoNLL files and the `paths` stage's fixture LMs
instead (a dry run whose figures only show that it works); with `--fixture-lms`, CoNLL-03 over
those LMs, which have the shipped LMs' layers and cost (for a machine without `pretrained/`).
Writes `gpu.json` (in `benchmarks/results/` unless `--results-dir`): `device`, `torch_version`,
`paths`, `all_paths_ok`, `epoch_seconds_ner_ldnet`, `batches_per_sec_train`,
`batches_per_sec_validation` and `epochs` of the device run, `profile`, and `cpu` with the same
figures (and the baseline's).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Sequence

from benchmarks.harness.data import CONLL03, ROOT, cpu_model, hardware, read_sentences
from benchmarks.harness.results import command_line, results_path, update_results_file, utc_date
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.timing import interleaved, thread_env

CONFIG = ROOT / "training_configs" / "tagging" / "ner_ldnet.jsonnet"
STEPS_SCRIPT = Path(__file__).with_name("gpu_steps.py")
DEVICE_FIGURES = (
    "device",
    "all_paths_ok",
    "epoch_seconds_ner_ldnet",
    "batches_per_sec_train",
    "batches_per_sec_validation",
)
PRETRAINED_LMS = {
    "FORWARD_LM_ARCHIVE": str(ROOT / "pretrained" / "lm_forward.tar.gz"),
    "BACKWARD_LM_ARCHIVE": str(ROOT / "pretrained" / "lm_backward.tar.gz"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--fixtures", action="store_true", help="a dry run on the fixtures")
    parser.add_argument(
        "--fixture-lms",
        action="store_true",
        help="CoNLL-03 over the paths stage's LMs (the shipped LMs' shape) instead of pretrained/",
    )
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the epoch stage")
    parser.add_argument("--profile-steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the cpu stage")
    parser.add_argument(
        "--cpu-batches",
        type=int,
        default=None,
        help="the cpu stage with --baseline times this many training batches per round (and all "
        "of dev), and takes a whole epoch's seconds from the rates",
    )
    parser.add_argument("--baseline", default=None, help="git ref the cpu stage also times")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "gpu")
    parser.add_argument("--results-dir", type=Path, default=None)


def _save(args: argparse.Namespace, updates: Dict[str, Any]) -> None:
    def merge(results: Dict[str, Any]) -> Dict[str, Any]:
        # the device run's headline figures are null until a run on a GPU measures them
        unmeasured = {key: results.get(key) for key in DEVICE_FIGURES}
        runs = results.get("commands", []) + [
            {"command": command_line(), "date": utc_date(), "hardware": hardware()}
        ]
        return {
            **unmeasured,
            "title": "Training on a GPU",
            "commands": runs,
            "hardware": runs[-1]["hardware"],
            **updates,
        }

    update_results_file(results_path("gpu.json", args.results_dir), merge)


def _variables(args: argparse.Namespace) -> Dict[str, str]:
    """
    The epoch config's variables: CoNLL-03 and the shipped LMs; with `--fixture-lms`, CoNLL-03
    and the `paths` stage's LMs (the shipped LMs' shape and cost, a small vocabulary); with
    `--fixtures`, the fixture data and those LMs.
    """
    if not (args.fixtures or args.fixture_lms):
        return {**CONLL03, **PRETRAINED_LMS}
    from benchmarks.studies.gpu_paths import FIXTURE_DATA, Paths

    lms = {
        f"{d.upper()}_LM_ARCHIVE": args.work_dir / "paths" / f"lm_{d}" / "model.tar.gz"
        for d in ("forward", "backward")
    }
    if not all(path.exists() for path in lms.values()):
        Paths(args.work_dir / "paths", 0 if args.device == "cuda" else -1).lms()
    data = FIXTURE_DATA if args.fixtures else CONLL03
    return {**data, **{name: str(path) for name, path in lms.items()}}


def _overrides(args: argparse.Namespace) -> Dict[str, Any]:
    """Batches of 4 on the fixtures (24 training sentences), so that there are rates to take."""
    return {"data_loader.batch_size": 4} if args.fixtures else {}


def _device(args: argparse.Namespace) -> Dict[str, Any]:
    import torch

    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device here (--device cpu?)")
        name = torch.cuda.get_device_name(0)
    else:
        name = cpu_model()
    return {"device": name, "device_type": args.device, "torch_version": torch.__version__}


def paths(args: argparse.Namespace) -> None:
    import ldnet_allennlp  # noqa: F401
    from allennlp.common.plugins import import_plugins

    from benchmarks.studies.gpu_paths import Paths

    import_plugins()
    results = Paths(args.work_dir / "paths", 0 if args.device == "cuda" else -1).all()
    ran = [result["ok"] for result in results.values() if result["ok"] is not None]
    _save(args, {**_device(args), "paths": results, "all_paths_ok": all(ran)})


def epoch(args: argparse.Namespace) -> None:
    import ldnet_allennlp  # noqa: F401

    from benchmarks.studies.gpu_steps import build_trainer, run_epochs

    train_model = build_trainer(
        str(CONFIG),
        _variables(args),
        {"trainer.num_epochs": args.epochs, **_overrides(args)},
        args.work_dir / "epoch",
        0 if args.device == "cuda" else -1,
    )
    figures = run_epochs(train_model)
    _save(args, {**_device(args), **_headline_figures(figures), "epochs": figures["epochs"]})


def _headline_figures(figures: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "epoch_seconds_ner_ldnet": figures.get("median_seconds"),
        "batches_per_sec_train": figures.get("median_train_batches_per_sec"),
        "batches_per_sec_validation": figures.get("median_validation_batches_per_sec"),
    }


def profile(args: argparse.Namespace) -> None:
    """Here, or with `--baseline`, the package now and at `REF`, each in a new process."""
    if args.baseline:
        baseline = _worktree(args.baseline, args.work_dir)
        figures = {
            name: _steps_process(args, name, path, ["--profile-steps", str(args.profile_steps)])()
            for name, path in (("now", ROOT), (f"baseline_{args.baseline}", baseline))
        }
        _save(args, {"profile_cpu_against_baseline": {**_device(args), **figures}})
        return
    import ldnet_allennlp  # noqa: F401

    from benchmarks.studies.gpu_steps import build_trainer, profile_steps

    cuda_device = 0 if args.device == "cuda" else -1
    train_model = build_trainer(
        str(CONFIG), _variables(args), _overrides(args), args.work_dir / "profile", cuda_device
    )
    figures = profile_steps(train_model, args.profile_steps)
    _save(args, {"profile": {**_device(args), **figures}})


def cpu(args: argparse.Namespace) -> None:
    """One epoch on the CPU, one thread, per round and package version, each in a new process."""
    versions = {"now": ROOT}
    if args.baseline:
        versions[f"baseline_{args.baseline}"] = _worktree(args.baseline, args.work_dir)
        options = ["--batches", str(args.cpu_batches)] if args.cpu_batches else []
        cases = {name: _steps_process(args, name, path, options) for name, path in versions.items()}
    else:  # one version: a fresh trainer per round in this process
        cases = {"now": lambda: _epoch_here(args)}

    def progress(index: int, samples: Dict[str, Any]) -> None:
        seconds = {name: round(sample["median_seconds"], 1) for name, sample in samples.items()}
        print(f"[gpu cpu] round {index + 1} of {args.rounds}: epoch seconds {seconds}", flush=True)

    timings = interleaved(
        cases,
        args.rounds,
        warmup=0,
        self_timed=True,
        order="alternate",
        threads=1,
        on_round=progress,
    )
    section: Dict[str, Any] = {"threads": 1, "device": cpu_model(), "rounds": args.rounds}
    for name in versions:
        section[name] = {
            key: timings.median(name, key)
            for key in (
                "median_seconds",
                "median_train_batches_per_sec",
                "median_validation_batches_per_sec",
            )
        }
        section[name]["per_round_seconds"] = timings.values(name, "median_seconds")
        if args.cpu_batches:
            section[name]["epoch_seconds_from_rates"] = _epoch_from_rates(args, timings, name)
    section.update(_headline_figures(section["now"]))
    if args.cpu_batches:
        section["batches_per_epoch_timed"] = args.cpu_batches
        section["epoch_seconds_ner_ldnet"] = section["now"]["epoch_seconds_from_rates"]
    if args.baseline:
        key = "epoch_seconds_from_rates" if args.cpu_batches else "median_seconds"
        before = section[f"baseline_{args.baseline}"][key]
        section["epoch_seconds_before"] = before
        section["epoch_speedup"] = before / section["now"][key]
    _save(args, {"cpu": section})


def _epoch_from_rates(args: argparse.Namespace, timings, name: str) -> float:
    """
    A whole epoch's seconds from a partial one (`--cpu-batches`): the training file's batches
    over the median training rate plus the dev file's over the median validation rate.
    """
    batch_size = 4 if args.fixtures else 32
    variables = _variables(args)
    batches = {
        phase: -(-len(read_sentences(variables[path])) // batch_size)
        for phase, path in (("train", "CONLL03_TRAIN_DATA_PATH"), ("dev", "CONLL03_DEV_DATA_PATH"))
    }
    train_rate = timings.median(name, "median_train_batches_per_sec")
    dev_rate = timings.median(name, "median_validation_batches_per_sec")
    return batches["train"] / train_rate + batches["dev"] / dev_rate


def _epoch_here(args: argparse.Namespace) -> Dict[str, Any]:
    """One epoch in this process (its threads are set by `interleaved`)."""
    import ldnet_allennlp  # noqa: F401
    from benchmarks.studies.gpu_steps import build_trainer, run_epochs

    overrides = {"trainer.num_epochs": 1, **_overrides(args)}
    work = args.work_dir / "cpu_now"
    return run_epochs(build_trainer(str(CONFIG), _variables(args), overrides, work, -1))


def _worktree(ref: str, work_dir: Path) -> Path:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    path = work_dir / f"baseline_{sha}"
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), sha],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    return path


def _steps_process(
    args: argparse.Namespace, name: str, package_root: Path, options: Sequence[str] = ()
):
    """A self-timed case: `gpu_steps.py` in a new process with `package_root` first on the path
    (the script is copied out of the package so that its own folder shadows nothing)."""
    script = args.work_dir / "gpu_steps_script.py"
    work = args.work_dir / f"cpu_{name}"

    def run() -> Dict[str, float]:
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(STEPS_SCRIPT.read_text())
        command = [
            sys.executable,
            str(script),
            str(CONFIG),
            "--device",
            "cpu",
            "--threads",
            "1",
            "--ext-vars",
            json.dumps(_variables(args)),
            "--overrides",
            json.dumps(_overrides(args)),
            "--work-dir",
            str(work),
            *options,
        ]
        env = thread_env(1, dict(os.environ, PYTHONPATH=str(package_root)))
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("GPU_STEPS_JSON ")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"{name}: gpu_steps.py failed:\n{done.stderr[-3000:]}")
        figures = json.loads(lines[-1].split(" ", 1)[1])
        if Path(figures["ldnet_allennlp"]).resolve() != (package_root / "ldnet_allennlp").resolve():
            raise SystemExit(f"{name}: ran {figures['ldnet_allennlp']}, not {package_root}")
        return figures

    return run


def summary(results: Dict[str, Any]) -> list:
    """The goals; a figure not measured yet (no GPU run, no CPU run) is shown open."""

    def goal(figure: str, key: str, bound: tuple) -> Headline:
        try:
            value = headline(results, figure, key).value
        except KeyError:
            value = None
        met = None if value is None else bool(bound[1](value))
        return Headline(figure, value, key, bound[0], met)

    every_path = ("true", lambda value: value is True)
    return [
        goal("all training paths, GPU", "all_paths_ok", every_path),
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
