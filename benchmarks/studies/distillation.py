"""
Tang et al. (2019) distillation on real data (issues 7, 18): SST-2 and SICK (3-way pair task),
every choice made on a dev set, the figures reported on a held-out test used once at the end.

Splits (the `splits` note of the JSON says the same; `distillation_data.py`):
  SST-2  dev   = `--sst2-dev-size` distinct sentences carved from GLUE train.tsv with `--seed`
               (<run-dir>/data/sst2/dev.tsv); train = `--sst2-train-size` rows (or `all`) of
               the rest, the training pool; no sentence is in both; test = GLUE dev.tsv.
  SICK   train = SemEval_set TRAIN (all 4,439 pairs, or a seeded subset), dev = TRIAL (495),
         test = TEST (4,906), chosen with the `distillation_tsv` reader's `#SemEval_set=` filter.

Stages `sst2` and `sick` (`distillation_pipeline.py`): split, fine-tune the MiniLM-L6 teacher,
build the augmented transfer set (`allennlp ldnet-distill-transfer-set`) for each `--n-iter`, train
the three students (`<task>_bilstm`, `<task>_distilled`, `<task>_distilled_aug`; with
`--student-word-vectors glove` also with a frozen GloVe channel, `*_glove` configs), choose
n_iter and the word vectors by dev accuracy, and last evaluate the four final models once on
the test split, which no earlier command gets. Dev figures: `<p>_dev_acc_*`; test figures:
`<p>_test_acc_*` (p = sst2 or pair).

Stage `speed` (`distillation_speed.py`): sentences/s of teacher vs student on CPU at batch 1
and 64, model forward only, both in one process (`harness.timing.interleaved`: a warm-up pass
of every (model, batch size), then `--rounds` interleaved rounds, the median), at 1 and at 2
torch threads, every setting under `speed_by_threads`; each headline `sentences_per_sec_*` is
the model's faster thread count. Timing data: the unlabelled GLUE test.tsv. Run it with the
SST-2 run's --run-dir, so that the student has the trained student's vocabulary. Stage `split`
only writes the split files; `report` only recomputes the derived keys (gains, `summary`,
`command`) of the results file.

Writes benchmarks/results/distillation.json (`SharedResults`: tasks may run side by side;
`distillation_results.py` keeps earlier runs and derives the rest) after every step; outputs
under --run-dir. A re-run in the same run dir skips finished steps; the settings its outputs
depend on are pinned in <run-dir>/<task>_settings.json, and other settings are refused (use a
fresh --run-dir), except more `--n-iter` or `--student-word-vectors` values. Figures of a part
run in another run dir move under `earlier_<part>_run_<dir>`.

    SST2_DATA_DIR=../shared/data/sst2 SICK_DATA_PATH=../shared/data/sick/SICK.txt \\
        python -m benchmarks distillation --stage sst2 --run-dir runs/d_sst2
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.runs import timed_once
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import distillation_data as data
from benchmarks.studies import distillation_pipeline as pipeline
from benchmarks.studies import distillation_speed
from benchmarks.studies.distillation_pipeline import Run
from benchmarks.studies.distillation_results import (
    EARLIER_KEY,
    finish_results,
    keep_earlier_part_run,
    keep_earlier_run,
    record_command,
)

RESULTS_NAME = "distillation"
# issue 18's goals: distilled + augmentation over the plain BiLSTM, and below its teacher
GAIN_GOAL = {"sst2": 4.0, "pair": 3.0}
GAP_GOAL = 3.0
SPEEDUP_GOAL = {1: 10.0, 64: 20.0}  # student / teacher sentences/s at batch 1, 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-dir", default=str(ROOT / "runs" / "distillation"))
    parser.add_argument("--threads", type=int, default=1, help="threads per subprocess")
    sizes = "rows of the SST-2 training pool (train.tsv minus the dev), or 'all'"
    parser.add_argument("--sst2-train-size", type=data.train_size, default=8000, help=sizes)
    parser.add_argument("--sst2-dev-size", type=int, default=2000, help="carved from train.tsv")
    parser.add_argument(
        "--pair-train-size", type=data.train_size, default=None, help="SICK TRAIN pairs (all)"
    )
    parser.add_argument("--teacher-epochs", type=int, default=2)
    parser.add_argument("--teacher-lr", type=float, default=5e-5)
    parser.add_argument(
        "--n-iter", type=int, nargs="+", default=[20], help="transfer-set sizes (chosen on dev)"
    )
    parser.add_argument("--pair-teacher-epochs", type=int, default=3, help="SICK override")
    parser.add_argument("--pair-n-iter", type=int, nargs="+", default=[8, 20], help="SICK override")
    parser.add_argument("--student-epochs", type=int, default=8)
    parser.add_argument(
        "--student-word-vectors",
        nargs="+",
        choices=data.WORD_VECTORS,
        default=["random"],
        help="students to train: random trained word vectors, and/or with a frozen GloVe 6B 50d "
        "channel (the better on dev is kept per student)",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--stop-after",
        choices=["teacher", "transfer_set"],
        help="end each task's pipeline after this step (sizes.<task>.stopped_after); "
        "re-running without it continues from there",
    )
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="speed: timed rounds")
    parser.add_argument("--speed-data", help="speed: TSV of sentences (default SST-2 test.tsv)")
    parser.add_argument("--speed-sentences", type=int, default=872, help="speed: at batch 64")
    parser.add_argument("--speed-b1-sentences", type=int, default=100, help="speed: at batch 1")
    parser.add_argument(
        "--results", default=RESULTS_NAME, help="results file under benchmarks/results/ (no .json)"
    )


def checked(args: argparse.Namespace) -> argparse.Namespace:
    if args.rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds: at least {MIN_ROUNDS} (the median of interleaved rounds)")
    if min(args.n_iter + (args.pair_n_iter or [])) < 1:
        raise SystemExit("--n-iter / --pair-n-iter: at least 1 (n_iter 0 is the distilled one)")
    return args


# ---------------------------------------------------------------------------------------------
# stages


def split(args: argparse.Namespace) -> None:
    """Only the split files of both tasks (and their settings pinned)."""
    run_dir = Path(checked(args).run_dir)
    for task in ("sst2", "sick"):
        data.pin_task_settings(task, run_dir, data.split_settings(task, args))
        timed_once(run_dir, f"{task}_split", lambda: data.write_split(task, args, run_dir))
        print(json.dumps({task: data.task_files(task, run_dir)}, default=str, indent=1))


def part(name: str):
    """The stage of one part ("sst2", "sick" or "speed"): the figures it writes replace those
    of its last run (kept under `earlier_*` when that was another run dir)."""

    def run_part(args: argparse.Namespace) -> None:
        run = start(checked(args), name)
        keep_earlier_part_run(run.results, name, run.run_dir)
        if name == "speed":  # after SST-2, whose student vocabulary it uses
            run.results.setdefault("run_dirs", {})["speed"] = str(run.run_dir)
            run.timed("speed", lambda: distillation_speed.speed(run) or True)
        else:
            pipeline.task_pipeline(name, run)
        record_command(run.results, [name], run.run_dir)
        written = run.save(finish=lambda results: finish_results(results, args.results))
        print(json.dumps(written, indent=2, sort_keys=True))

    return run_part


def start(args: argparse.Namespace, part_name: str) -> Run:
    """The results file opened for a part, with the notes and settings every part shares; the
    tasks' own settings (n_iter, epochs, sizes) are under "sizes"."""
    run = Run.open(args)
    keep_earlier_run(run.results)
    run.results.setdefault("splits", {})["keys"] = (
        "<p>_dev_acc_* = best accuracy on the dev split (SST-2: carved from train.tsv; SICK: "
        "TRIAL), on which every choice was made; <p>_test_acc_* = the held-out test (SST-2: "
        "GLUE dev.tsv; SICK: TEST), evaluated once per final model at the end; figures from "
        f"before these splits: {EARLIER_KEY}"
    )
    if part_name == "speed":  # the speed figures are the ones the machine matters for
        run.results["hardware"] = hardware()
    keys = ("seed", "student_epochs", "teacher_lr", "threads")
    run.results["settings"] = {key: getattr(args, key) for key in keys}
    run.save()
    return run


def report(args: argparse.Namespace) -> None:
    """Recomputes the derived keys of the results file (`finish_results`)."""
    run = Run.open(args)
    run.save(finish=lambda results: finish_results(results, args.results))


# ---------------------------------------------------------------------------------------------
# headlines


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Held-out test accuracies, the gains over the plain BiLSTM and the gaps to the teacher
    against issue 18's goals, and the student's speed-up over the teacher."""
    lines = []
    for prefix, task in (("sst2", "SST-2"), ("pair", "SICK")):
        for variant, label in (("teacher", "teacher"), ("bilstm", "plain BiLSTM")):
            lines.append(
                headline(results, f"{task} test accuracy, {label}", f"{prefix}_test_acc_{variant}")
            )
        key = f"{prefix}_test_acc_distilled_aug"
        lines.append(headline(results, f"{task} test accuracy, distilled + augmentation", key))
        key = f"{prefix}_test_gain_distilled_aug_over_bilstm"
        lines.append(
            headline(
                results, f"{task} gain over the plain BiLSTM", key, *at_least(GAIN_GOAL[prefix])
            )
        )
        key = f"{prefix}_test_gap_teacher_minus_distilled_aug"
        lines.append(headline(results, f"{task} teacher minus student", key, *at_most(GAP_GOAL)))
    for b in (1, 64):
        figure = f"student / teacher sentences/s, batch {b}"
        lines.append(
            headline(results, figure, f"student_speedup_b{b}", *at_least(SPEEDUP_GOAL[b], "x"))
        )
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
        Stage("report", report, "only recompute the derived keys of the results file"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
