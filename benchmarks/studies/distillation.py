"""
Tang et al. (2019) distillation on SST-2 and SICK (3-way pairs) through the shared pipeline
(`distillation_pipeline.py`; the data and steps: `distillation_tasks.py`). Stages `sst2` and
`sick`: split, fine-tune the MiniLM-L6 teacher, build the augmented transfer set per `--n-iter`,
train the students (`bilstm`, `distilled`, `distilled_aug`; with `--student-word-vectors glove`
also with a frozen GloVe channel), choose on dev (`<p>_dev_acc_*`), evaluate the four final
models once on the test (`<p>_test_acc_*`; p = sst2 or pair). `speed` times teacher vs student
(with the SST-2 run's `--run-dir`); `split` only writes the splits. A re-run skips finished
steps; the settings its outputs depend on are pinned in <run-dir>/<task>_settings.json.

    SST2_DATA_DIR=../shared/data/sst2 SICK_DATA_PATH=../shared/data/sick/SICK.txt \\
        python -m benchmarks distillation --stage sst2 --run-dir runs/d_sst2
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, utc_date
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import distillation_tasks as tasks
from benchmarks.studies.distillation_pipeline import Pipeline

# distilled + augmentation over the plain BiLSTM (test accuracy points), and below its teacher
GAIN_GOAL = {"sst2": 4.0, "pair": 3.0}
GAP_GOAL = 3.0
SPEEDUP_GOAL = {1: 10.0, 64: 20.0}  # student / teacher sentences/s at batch 1, 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--run-dir", default=str(ROOT / "runs" / "distillation"))
    add("--threads", type=int, default=1, help="threads per subprocess")
    sizes = "rows of the SST-2 training pool (train.tsv minus the dev), or 'all'"
    add("--sst2-train-size", type=tasks.train_size, default=8000, help=sizes)
    add("--sst2-dev-size", type=int, default=2000, help="carved from train.tsv")
    add("--pair-train-size", type=tasks.train_size, default=None, help="SICK TRAIN pairs (all)")
    add("--teacher-epochs", type=int, default=2)
    add("--teacher-lr", type=float, default=5e-5)
    add("--n-iter", type=int, nargs="+", default=[20], help="transfer-set sizes (chosen on dev)")
    add("--pair-teacher-epochs", type=int, default=3, help="SICK override")
    add("--pair-n-iter", type=int, nargs="+", default=[8, 20], help="SICK override")
    add("--student-epochs", type=int, default=8)
    add(
        "--student-word-vectors",
        nargs="+",
        choices=tasks.WORD_VECTORS,
        default=["random"],
        help="students to train: random trained word vectors, and/or with a frozen GloVe 6B 50d "
        "channel (the better on dev is kept per student)",
    )
    add("--seed", type=int, default=13)
    add("--rounds", type=int, default=MIN_ROUNDS, help="speed: timed rounds")
    add("--speed-sentences", type=int, default=872, help="speed: at batch 64")
    add("--speed-b1-sentences", type=int, default=100, help="speed: at batch 1")


def checked(args: argparse.Namespace) -> argparse.Namespace:
    if args.rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds: at least {MIN_ROUNDS} (the median of interleaved rounds)")
    if min(args.n_iter + (args.pair_n_iter or [])) < 1:
        raise SystemExit("--n-iter / --pair-n-iter: at least 1 (n_iter 0 is the distilled one)")
    return args


def split(args: argparse.Namespace) -> None:
    """Only the split files of both tasks (and their settings pinned)."""
    run_dir = Path(checked(args).run_dir)
    pipe = Pipeline(run_dir, run_dir / "logs" / "split.log")
    for task in ("sst2", "sick"):
        pipe.step(f"{task}_split", lambda: tasks.split_once(task, args, run_dir))
        print(json.dumps({task: tasks.task_files(task, run_dir)}, indent=1))


def part(name: str):
    """The stage of one part: "sst2", "sick" or "speed" (after SST-2, whose student it times);
    its command in `commands`, the part's own entries from other run dirs replaced (the figures
    they wrote are replaced too)."""

    def run_part(args: argparse.Namespace) -> None:
        run = tasks.Run(checked(args))
        results = run.results
        results.setdefault("splits", {})["keys"] = (
            "<p>_dev_acc_* = best accuracy on the dev split (SST-2: carved from train.tsv; "
            "SICK: TRIAL), on which every choice was made; <p>_test_acc_* = the held-out test "
            "(SST-2: GLUE dev.tsv; SICK: TEST), evaluated once per final model at the end"
        )
        keys = ("seed", "student_epochs", "teacher_lr", "threads")
        results["settings"] = {key: getattr(args, key) for key in keys}
        results.setdefault("run_dirs", {})[name] = str(run.run_dir)
        results["date"] = utc_date()
        if name == "speed":
            results["hardware"] = hardware()
            run.pipeline(name).step("speed", lambda: tasks.speed(run) or True)
        else:
            tasks.Task(name, run).steps()
        entry = {"part": name, "command": command_line(), "run_dir": str(run.run_dir)}
        commands = results.get("commands", [])
        kept = [c for c in commands if c["part"] != name or c["run_dir"] == entry["run_dir"]]
        results["commands"] = kept + ([] if entry in kept else [entry])
        print(json.dumps(run.save(finish=finish_results), indent=2, sort_keys=True))

    return run_part


def finish_results(results: Dict[str, Any]) -> None:
    """The keys derived from all tasks' figures, recomputed on the file as saved:
    `<p>_<split>_gain_distilled_aug_over_bilstm` and `<p>_<split>_gap_teacher_minus_distilled_aug`,
    the title and the command."""
    for key in (f"{p}_{split}" for p in ("sst2", "pair") for split in ("dev", "test")):
        teacher, bilstm, student = (
            results.get(f"{key}_acc_{v}") for v in ("teacher", "bilstm", "distilled_aug")
        )
        if bilstm is not None and student is not None:
            results[f"{key}_gain_distilled_aug_over_bilstm"] = round(student - bilstm, 2)
        if teacher is not None and student is not None:
            results[f"{key}_gap_teacher_minus_distilled_aug"] = round(teacher - student, 2)
    results["title"] = "Tang et al. distillation: SST-2 and a pair task"
    commands = results.get("commands", [])
    results["command"] = "; ".join(dict.fromkeys(entry["command"] for entry in commands))


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Held-out test accuracies, the gains over the plain BiLSTM and the gaps to the teacher
    against their goals, and the student's speed-up over the teacher."""
    lines = []
    for prefix, task in (("sst2", "SST-2"), ("pair", "SICK")):
        for variant, label in (("teacher", "teacher"), ("bilstm", "plain BiLSTM")):
            key = f"{prefix}_test_acc_{variant}"
            lines.append(headline(results, f"{task} test accuracy, {label}", key))
        key = f"{prefix}_test_acc_distilled_aug"
        lines.append(headline(results, f"{task} test accuracy, distilled + augmentation", key))
        key, goal = f"{prefix}_test_gain_distilled_aug_over_bilstm", at_least(GAIN_GOAL[prefix])
        lines.append(headline(results, f"{task} gain over the plain BiLSTM", key, *goal))
        key = f"{prefix}_test_gap_teacher_minus_distilled_aug"
        lines.append(headline(results, f"{task} teacher minus student", key, *at_most(GAP_GOAL)))
    for b in (1, 64):
        figure, goal = f"student / teacher sentences/s, batch {b}", at_least(SPEEDUP_GOAL[b], "x")
        lines.append(headline(results, figure, f"student_speedup_b{b}", *goal))
    return lines


STUDY = Study(
    name="distillation",
    description="Tang et al. distillation on SST-2 and SICK: held-out test accuracy and speed.",
    results_file="distillation.json",
    stages=[
        Stage("split", split, "only write both tasks' split files"),
        Stage("sst2", part("sst2"), "SST-2: teacher, transfer sets, students, held-out test"),
        Stage("sick", part("sick"), "SICK: teacher, transfer sets, students, held-out test"),
        Stage("speed", part("speed"), "teacher vs student sentences/s on CPU"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
