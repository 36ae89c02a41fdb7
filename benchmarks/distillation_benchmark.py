"""
Tang et al. (2019) distillation benchmark on real data: SST-2 and SICK (3-way pair task), with
every choice made on a dev set and the figures reported on a held-out test used once at the end.

Splits (the `splits` note of the JSON says the same):
  SST-2  dev   = `--sst2-dev-size` distinct sentences carved from GLUE train.tsv with `--seed`
               (written to <run-dir>/data/sst2/dev.tsv);
         train = `--sst2-train-size` rows (or `all`) of the rest of train.tsv, the training pool
               (<run-dir>/data/sst2/train.tsv); no sentence is in both;
         test  = GLUE dev.tsv (872 sentences; GLUE's test labels are not public).
  SICK   train = SemEval_set TRAIN (all 4,439 pairs, or a seeded subset), dev = TRIAL (495),
         test = TEST (4,906), chosen with the `distillation_tsv` reader's `#SemEval_set=...` filter.

Per task: split, fine-tune the MiniLM-L6 teacher (`<task>_teacher.jsonnet`, best epoch on dev),
build the augmented transfer set (`allennlp distill-transfer-set`) for each `--n-iter`, train the
three students (`<task>_bilstm`, `<task>_distilled`, `<task>_distilled_aug`; best epoch on dev),
with `--student-word-vectors glove` also each with a frozen GloVe channel (`*_glove` configs),
choose n_iter and the word vectors by dev accuracy, and last evaluate the four final models once
on the test split
(`allennlp evaluate`). The test split is not read before that step: no training, labelling or
selection command gets its path. Dev figures: `<p>_dev_acc_*`; test figures: `<p>_test_acc_*`
(p = sst2 or pair).

Speed (`--stage speed`): sentences/s of teacher vs student on CPU at batch 1 and 64, model
forward only, both timed the same way in one process: one warm-up pass of every (model, batch
size), then `--rounds` (>= 5) interleaved rounds (teacher, student, teacher, student, ...), the
median round; all of it at 1 and at 2 torch threads (set with torch.set_num_threads), every
setting under `speed_by_threads`; each headline `sentences_per_sec_*` is the model's faster
thread count (`speed_threads_used`). Timing data: the unlabelled GLUE test.tsv sentences (never
a split that a figure is measured on). Run it with the SST-2 run's --run-dir so that the student
has the trained student's vocabulary (its parameter count is then the real one).

Writes benchmarks/results/distillation.json after every stage (partial results are kept),
outputs under --run-dir. Every stage is resumable: a re-run in the same run dir skips finished
stages (judged by their output files), resumes an interrupted transfer set and continues an
interrupted `allennlp train` with `--recover`. The settings a run dir's outputs depend on are
pinned in <run-dir>/<task>_settings.json; a re-run with other settings is refused (use a fresh
--run-dir), except more `--n-iter` or `--student-word-vectors` values, which add transfer sets
and students. Each stage's
wall-clock is under `stage_seconds`; every invocation that wrote figures is under `commands`.

    SST2_DATA_DIR=../shared/data/sst2 SICK_DATA_PATH=../shared/data/sick/SICK.txt \\
        .venv/bin/python benchmarks/distillation_benchmark.py --stage sst2 --run-dir runs/d_sst2
    (and --stage sick, --stage speed; `--stage split` only writes the split files)
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import (  # noqa: E402
    DATA,
    ROOT,
    duration_seconds,
    hardware,
    run_allennlp,
    trained,
)
from benchmarks.common import SharedResults  # noqa: E402

CONFIGS = ROOT / "training_configs" / "distillation"
# Threads for the training, labelling and evaluation subprocesses (--threads). The speed stage
# sets its own torch threads: it times both models at 1 and at 2 threads (`speed_by_threads`).
THREADS = 1
MIN_ROUNDS = 5  # speed: the median of at least this many interleaved rounds
VARIANTS = ("teacher", "bilstm", "distilled", "distilled_aug")
STUDENT_VARIANTS = VARIANTS[1:]
# the students' word vectors (--student-word-vectors): trained random vectors (`<task>_<variant>`
# configs), or those plus a frozen GloVe channel (`<task>_<variant>_glove`); per student, the
# one with the better dev accuracy is kept (ties: the first listed here)
WORD_VECTORS = ("random", "glove")
# where the figures measured before the held-out splits are kept (see keep_earlier_run)
EARLIER_KEY = "earlier_run_selected_on_glue_dev"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# name of the results file under benchmarks/results/ (--results changes it)
RESULTS_NAME = "distillation"


_SHARED: Optional[SharedResults] = None  # the results file as this run last read or wrote it


def load_results() -> Dict[str, Any]:
    global _SHARED
    _SHARED = SharedResults(RESULTS_NAME)
    return _SHARED.load()


def save_results(
    results: Dict[str, Any], finish: Optional[Callable[[Dict[str, Any]], None]] = None
) -> Dict[str, Any]:
    """This run's changes into the results file (runs of other tasks may save side by side)."""
    global _SHARED
    if _SHARED is None or _SHARED.name != RESULTS_NAME:
        _SHARED = SharedResults(RESULTS_NAME)
    return _SHARED.save(results, finish)


# ---------------------------------------------------------------------------------------------
# data files and splits


def sst2_dir() -> str:
    return os.environ.get("SST2_DATA_DIR", str(DATA / "sst2"))


def sick_path() -> str:
    return os.environ.get("SICK_DATA_PATH", str(DATA / "sick" / "SICK.txt"))


def sst2_test_path() -> str:
    """The SST-2 held-out test: GLUE dev.tsv. Only the final evaluation step asks for it."""
    return os.path.join(sst2_dir(), "dev.tsv")


def sick_split(name: str) -> str:
    return f"{sick_path()}#SemEval_set={name}"


def read_tsv(file_path: str) -> Tuple[str, List[str]]:
    """
    The header line and the data lines (line ends kept) of a TSV file; a `#column=value` suffix
    keeps the rows whose `column` is `value`, as the `distillation_tsv` reader does.
    """
    path, _, selector = file_path.partition("#")
    # lines are split at "\n" only (read_text makes "\r\n" one); each row gets its "\n"
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    header, rows = lines[0] + "\n", [line + "\n" for line in lines[1:] if line.strip()]
    if selector:
        column, value = selector.split("=", 1)
        index = header.rstrip("\n").split("\t").index(column)
        rows = [r for r in rows if r.rstrip("\n").split("\t")[index] == value]
    return header, rows


def write_tsv(target: Path, header: str, rows: Sequence[str]) -> None:
    """Written whole or not at all (a temporary file renamed), so a stopped run leaves no half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(header + "".join(rows), encoding="utf-8")
    os.replace(partial, target)


def cell(header: str, row: str, column: str) -> str:
    return row.rstrip("\n").split("\t")[header.rstrip("\n").split("\t").index(column)]


def carve_dev(
    header: str, rows: Sequence[str], column: str, dev_size: int, seed: int
) -> Tuple[List[str], List[str]]:
    """
    `(dev, pool)`: the dev holds `dev_size` distinct sentences (`column`, whitespace-stripped)
    drawn with `random.Random(seed)` from the distinct sentences of `rows`, one row each (the
    first in file order); the pool holds every row whose sentence is not in the dev (duplicates
    of a dev sentence go with it). Both keep file order. The same rows and seed give the same
    split.
    """
    keys = [cell(header, row, column).strip() for row in rows]
    distinct = list(dict.fromkeys(keys))
    if not 0 < dev_size < len(distinct):
        raise SystemExit(f"dev size {dev_size}: must be between 1 and {len(distinct) - 1}")
    chosen = set(random.Random(seed).sample(distinct, dev_size))
    dev, pool, seen = [], [], set()
    for key, row in zip(keys, rows):
        if key not in chosen:
            pool.append(row)
        elif key not in seen:
            seen.add(key)
            dev.append(row)
    return dev, pool


def choose_rows(rows: Sequence[str], size: Optional[int], seed: int) -> List[str]:
    """A seeded random subset of `size` rows in file order; `None` (`all`) = every row."""
    if size is None or size >= len(rows):
        return list(rows)
    chosen = sorted(random.Random(seed).sample(range(len(rows)), size))
    return [rows[i] for i in chosen]


def train_size(value: str) -> Optional[int]:
    """argparse type of the train sizes: a positive number of rows, or `all` (None)."""
    if value == "all":
        return None
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'all', got {value!r}")
    return int(value)


def task_files(task: str, run_dir: Path) -> Dict[str, Any]:
    """A task's split files: `train` and `dev` (what training and selection read) and `test`."""
    data_dir = run_dir / "data" / task
    if task == "sst2":
        return {
            "record": data_dir / "split.json",
            "train_file": data_dir / "train.tsv",
            "train": str(data_dir / "train.tsv"),
            "dev": str(data_dir / "dev.tsv"),
            "test": sst2_test_path(),
        }
    return {
        "record": data_dir / "split.json",
        "train_file": data_dir / "SICK_train_subset.txt",
        "train": str(data_dir / "SICK_train_subset.txt"),
        "dev": sick_split("TRIAL"),
        "test": sick_split("TEST"),
    }


def write_split(task: str, args, run_dir: Path) -> bool:
    """
    The split files of a task in `<run_dir>/data/<task>/`, then `split.json` (what was written;
    its presence marks the stage done). Reads only the training source: SST-2's train.tsv, the
    TRAIN rows of SICK.txt.
    """
    files = task_files(task, run_dir)
    if files["record"].exists():
        return False
    if task == "sst2":
        source = os.path.join(sst2_dir(), "train.tsv")
        header, rows = read_tsv(source)
        dev, pool = carve_dev(header, rows, "sentence", args.sst2_dev_size, args.seed)
        train = choose_rows(pool, args.sst2_train_size, args.seed)
        write_tsv(Path(files["dev"]), header, dev)
        record = {
            "source": source,
            "source_rows": len(rows),
            "dev_rows": len(dev),
            "train_pool_rows": len(pool),
            "rows_dropped_as_duplicates_of_dev_sentences": len(rows) - len(dev) - len(pool),
        }
    else:
        source = sick_split("TRAIN")
        header, pool = read_tsv(source)
        train = choose_rows(pool, args.pair_train_size, args.seed)
        record = {
            "source": source,
            "train_pool_rows": len(pool),
            "dev": files["dev"],
            "dev_rows": len(read_tsv(files["dev"])[1]),
        }
    write_tsv(files["train_file"], header, train)
    record.update(train_rows=len(train), seed=args.seed)
    files["record"].write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return True


def sst2_split_settings(args) -> Dict[str, Any]:
    size = args.sst2_train_size or "all"
    return {"seed": args.seed, "train_size": size, "dev_size": args.sst2_dev_size}


def sick_split_settings(args) -> Dict[str, Any]:
    return {"seed": args.seed, "train_size": args.pair_train_size or "all"}


def pin_settings(task: str, run_dir: Path, settings: Dict[str, Any]) -> None:
    """
    Records the settings a stage's outputs depend on in `<run_dir>/<task>_settings.json`, and
    refuses a run whose settings differ from the recorded ones (its outputs would be mixed).
    """
    path = run_dir / f"{task}_settings.json"
    pinned = json.loads(path.read_text()) if path.exists() else {}
    legacy = (f"data/{task}", f"{task}_teacher", f"transfer/{task}_aug.jsonl")
    if not pinned and any((run_dir / name).exists() for name in legacy):
        raise SystemExit(
            f"{run_dir} holds {task} outputs from before the held-out splits (no {path.name}); "
            "use a fresh --run-dir"
        )
    changed = {k: (pinned[k], v) for k, v in settings.items() if k in pinned and pinned[k] != v}
    if changed:
        raise SystemExit(
            f"{run_dir} was made with other {task} settings (recorded, given): {changed}; "
            "use a fresh --run-dir or the recorded settings"
        )
    pinned.update(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------------------------
# stages


def best_dev_accuracy(serialization_dir: Path) -> float:
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return round(100.0 * metrics["best_validation_accuracy"], 2)


def test_accuracy(model_dir: Path) -> float:
    return round(100.0 * json.loads((model_dir / "test_metrics.json").read_text())["accuracy"], 2)


def train(config: str, serialization_dir: Path, overrides: Dict[str, Any], env, log) -> None:
    """
    `allennlp train`, unless the model is there. A serialization dir left by an interrupted run
    (config.json, and no model.tar.gz or only the one `allennlp train` leaves when it is stopped:
    `trained`) is continued with `--recover`; any other leftover is replaced.
    """
    if trained(serialization_dir):
        return
    resume = (serialization_dir / "config.json").exists()
    args = ["train", str(CONFIGS / config), "-s", str(serialization_dir)]
    args += ["--recover"] if resume else ["-f"]
    args += ["-o", json.dumps(overrides, sort_keys=True)]
    run_allennlp(args, log, env, threads=THREADS)


def timed(results: Dict[str, Any], name: str, function, run_dir: Path) -> None:
    """
    Runs a stage and saves. Its wall time is recorded when the stage did work, also in
    `<run_dir>/stage_seconds.json`, from which a re-run that skips the finished stage takes it
    (a resumed stage records the time of its last part only).
    """
    record = run_dir / "stage_seconds.json"
    recorded = json.loads(record.read_text()) if record.exists() else {}
    start = time.time()
    did_work = function()
    if did_work:
        recorded[name] = round(time.time() - start, 1)
        record.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    if name in recorded:
        results.setdefault("stage_seconds", {})[name] = recorded[name]
    save_results(results)


def only_originals(aug_path: Path, target: Path) -> None:
    """The un-augmented transfer set: header (n_iter set to 0) + the original rows."""
    partial = target.with_name(target.name + ".partial")
    with open(aug_path, encoding="utf-8") as source, open(partial, "w", encoding="utf-8") as out:
        header = json.loads(source.readline())
        header["transfer_set"]["n_iter"] = 0
        header["transfer_set"]["derived_from"] = str(aug_path)
        out.write(json.dumps(header) + "\n")
        for line in source:
            if not json.loads(line)["augmented"]:
                out.write(line)
    os.replace(partial, target)


def count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle)


def split_note(task: str, args, split: Dict[str, Any]) -> str:
    if task == "sst2":
        size = "all" if args.sst2_train_size is None else args.sst2_train_size
        return (
            f"train = {split['train_rows']} rows ({size}) of GLUE SST-2 train.tsv minus the dev; "
            f"dev = {split['dev_rows']} distinct sentences carved from train.tsv with seed "
            f"{args.seed} (<run dir>/data/sst2/dev.tsv; {split['train_pool_rows']} rows left in "
            "the training pool), on which every choice is made (teacher and student best epochs, "
            "n_iter); test = GLUE dev.tsv, evaluated once per final model after all training "
            "(sst2_test_acc_*)"
        )
    return (
        f"train = {split['train_rows']} of the {split['train_pool_rows']} SemEval_set TRAIN "
        f"pairs of SICK.txt; dev = TRIAL ({split['dev_rows']} pairs), on which every choice is "
        "made (best epochs, n_iter); test = TEST, evaluated once per final model after all "
        "training (pair_test_acc_*)"
    )


def task_pipeline(task: str, args, results: Dict[str, Any], run_dir: Path) -> None:
    prefix = "sst2" if task == "sst2" else "pair"
    pair = task != "sst2"
    upper = "SICK" if pair else "SST2"
    files = task_files(task, run_dir)
    train_path = files["train"]
    # what training, labelling and selection may read: the training subset and the dev split
    if pair:
        env = {"SICK_DATA_PATH": sick_path()}  # the configs' dev: its TRIAL rows
    else:
        env = {"SST2_TRAIN_DATA_PATH": train_path, "SST2_DEV_DATA_PATH": files["dev"]}
    log = run_dir / "logs" / f"{task}.log"
    teacher_epochs = (args.pair_teacher_epochs if pair else None) or args.teacher_epochs
    n_iters = sorted(set(args.pair_n_iter if pair and args.pair_n_iter else args.n_iter))
    results.setdefault("run_dirs", {})[task] = str(run_dir)
    sizes = results.setdefault("sizes", {})[task] = {}

    pin_settings(task, run_dir, sick_split_settings(args) if pair else sst2_split_settings(args))
    timed(results, f"{task}_split", lambda: write_split(task, args, run_dir), run_dir)
    split = json.loads(files["record"].read_text())
    sizes.update({k: v for k, v in split.items() if k not in ("seed", "train_rows")})
    sizes["train_examples"] = split["train_rows"]
    results.setdefault("splits", {})[task] = split_note(task, args, split)
    if pair:
        results["pair_task"] = (
            f"SICK 3-way (train = {split['train_rows']} SemEval_set TRAIN pairs, dev = TRIAL, "
            "test = TEST)"
        )
    results[f"{prefix}_dev_split"] = files["dev"]

    teacher_dir = run_dir / f"{task}_teacher"
    pin_settings(task, run_dir, {"teacher_epochs": teacher_epochs, "teacher_lr": args.teacher_lr})

    def teacher():
        if trained(teacher_dir):
            return False
        overrides = {
            "train_data_path": train_path,
            "trainer.num_epochs": teacher_epochs,
            "trainer.optimizer.lr": args.teacher_lr,
        }
        train(f"{task}_teacher.jsonnet", teacher_dir, overrides, env, log)
        return True

    timed(results, f"{task}_teacher_finetune", teacher, run_dir)
    results[f"{prefix}_dev_acc_teacher"] = best_dev_accuracy(teacher_dir)
    sizes["teacher_epochs"] = teacher_epochs
    first_epoch = teacher_dir / "metrics_epoch_0.json"
    if first_epoch.exists():  # what one teacher epoch costs (training + dev), to size a run
        seconds = duration_seconds(json.loads(first_epoch.read_text())["training_duration"])
        sizes["teacher_seconds_epoch_0"] = round(seconds, 1)
        sizes["teacher_seconds_per_epoch_per_1k_train"] = round(
            1000 * seconds / split["train_rows"], 1
        )
    if args.stop_after == "teacher":
        # where a budget stops the pipeline: a re-run without --stop-after goes on from here
        sizes["stopped_after"] = "teacher"
        save_results(results)
        return
    save_results(results)

    transfer_plain = run_dir / "transfer" / f"{task}.jsonl"
    transfer_aug = {n: run_dir / "transfer" / f"{task}_aug_n{n}.jsonl" for n in n_iters}
    for n_iter, aug_path in transfer_aug.items():
        done_marker = aug_path.with_suffix(".done")

        def transfer_set(aug_path=aug_path, done_marker=done_marker, n_iter=n_iter):
            if done_marker.exists():
                return False
            aug_path.parent.mkdir(parents=True, exist_ok=True)
            run_allennlp(
                [
                    "distill-transfer-set",
                    str(teacher_dir / "model.tar.gz"),
                    train_path,
                    str(aug_path),
                    "--n-iter",
                    str(n_iter),
                    "--seed",
                    str(args.seed),
                    "--batch-size",
                    "64",
                ],
                log,
                env,
                threads=THREADS,
            )
            done_marker.write_text("done\n")
            return True

        timed(results, f"{task}_transfer_set_n{n_iter}", transfer_set, run_dir)
        if not transfer_plain.exists():  # the originals, labelled by the same teacher
            only_originals(aug_path, transfer_plain)
    sizes["transfer_set_rows_plain"] = count_lines(transfer_plain) - 1
    if args.stop_after == "transfer_set":  # (else counted below, with earlier invocations')
        sizes["transfer_set_rows_aug_by_n_iter"] = {
            str(n): count_lines(path) - 1 for n, path in transfer_aug.items()
        }
        sizes["stopped_after"] = "transfer_set"
        save_results(results)
        return
    save_results(results)

    env[f"{upper}_TRANSFER_SET"] = str(transfer_plain)
    pin_settings(task, run_dir, {"student_epochs": args.student_epochs})
    students = []
    for vectors in args.student_word_vectors:
        students += [("bilstm", None, vectors), ("distilled", None, vectors)]
        students += [("distilled_aug", n, vectors) for n in n_iters]
    for variant, n_iter, vectors in students:
        name = student_name(variant, n_iter, vectors)
        student_dir = run_dir / f"{task}_{name}"
        config = student_config(task, variant, vectors)
        overrides: Dict[str, Any] = {"trainer.num_epochs": args.student_epochs}
        if variant == "bilstm":
            overrides["train_data_path"] = train_path
        student_env = dict(env)
        if n_iter is not None:
            student_env[f"{upper}_TRANSFER_SET_AUG"] = str(transfer_aug[n_iter])

        def student(student_dir=student_dir, config=config, overrides=overrides, e=student_env):
            if trained(student_dir):
                return False
            train(config, student_dir, overrides, e, log)
            return True

        timed(results, f"{task}_student_{name}", student, run_dir)
        save_results(results)

    # per student, the best dev accuracy among every n_iter and word-vector channel trained in
    # this run dir (ties: random vectors, then the smaller n_iter)
    candidates = trained_students(task, run_dir)
    finals = chosen_students(candidates)
    results[f"{prefix}_dev_acc_by_student"] = {
        name: found["dev"] for name, found in candidates.items()
    }
    for variant in STUDENT_VARIANTS:
        results[f"{prefix}_dev_acc_{variant}"] = candidates[finals[variant]]["dev"]
    sizes["word_vectors"] = {v: candidates[finals[v]]["vectors"] for v in STUDENT_VARIANTS}
    chosen_vectors = sizes["word_vectors"]["distilled_aug"]
    by_n_iter = {
        found["n_iter"]: found["dev"]
        for found in candidates.values()
        if found["variant"] == "distilled_aug" and found["vectors"] == chosen_vectors
    }
    chosen = candidates[finals["distilled_aug"]]["n_iter"]
    results[f"{prefix}_dev_acc_distilled_aug_by_n_iter"] = {str(n): by_n_iter[n] for n in by_n_iter}
    sizes["n_iter"] = chosen
    sizes["n_iter_compared"] = sorted(by_n_iter)
    sizes["transfer_set_rows_aug_by_n_iter"] = {  # also those of earlier invocations
        str(n): count_lines(run_dir / "transfer" / f"{task}_aug_n{n}.jsonl") - 1 for n in by_n_iter
    }
    sizes["transfer_set_rows_aug"] = sizes["transfer_set_rows_aug_by_n_iter"][str(chosen)]
    save_results(results)

    # the held-out test: once, for the four final models, after everything above
    finals = {"teacher": teacher_dir, **{v: run_dir / finals[v] for v in STUDENT_VARIANTS}}

    def test_evaluation():
        did_work = False
        for model_dir in finals.values():
            if (model_dir / "test_metrics.json").exists():
                continue
            arguments = ["evaluate", str(model_dir / "model.tar.gz"), files["test"]]
            arguments += ["--output-file", str(model_dir / "test_metrics.json")]
            run_allennlp(arguments, log, env, threads=THREADS)
            did_work = True
        return did_work

    timed(results, f"{task}_test_evaluation", test_evaluation, run_dir)
    for variant, model_dir in finals.items():
        results[f"{prefix}_test_acc_{variant}"] = test_accuracy(model_dir)
    _, test_rows = read_tsv(files["test"])  # counted only now, after the evaluation
    name = "GLUE SST-2 dev.tsv" if task == "sst2" else "SICK.txt, SemEval_set TEST"
    results[f"{prefix}_test_split"] = f"{name}: {files['test']} ({len(test_rows)} examples)"
    # every model of this run dir that was ever scored on the test (more than the four finals
    # only if a later invocation with more n_iter values changed the dev choice)
    results.setdefault("test_evaluations", {})[task] = {
        path.parent.name: test_accuracy(path.parent)
        for path in sorted(run_dir.glob(f"{task}_*/test_metrics.json"))
    }
    save_results(results)


def student_name(variant: str, n_iter: Optional[int], vectors: str) -> str:
    """A student's run name (its directory: `<task>_<name>`): e.g. `bilstm`, `distilled_aug_n20`,
    `glove_distilled_aug_n20`."""
    name = variant if n_iter is None else f"{variant}_n{n_iter}"
    return name if vectors == "random" else f"{vectors}_{name}"


def student_config(task: str, variant: str, vectors: str) -> str:
    """The config of a student: `<task>_<variant>.jsonnet`, `<task>_<variant>_glove.jsonnet`."""
    return f"{task}_{variant}{'' if vectors == 'random' else '_' + vectors}.jsonnet"


def trained_students(task: str, run_dir: Path) -> Dict[str, Dict[str, Any]]:
    """
    Every finished student of the run dir, also those of earlier invocations: directory name ->
    variant, word vectors, n_iter (distilled_aug) and best dev accuracy; ordered by variant, then
    word vectors (random first), then n_iter.
    """
    found = {}
    for variant in STUDENT_VARIANTS:
        for vectors in WORD_VECTORS:
            pattern = student_name(variant, None, vectors)
            pattern += "_n*" if variant == "distilled_aug" else ""
            dirs = [a.parent for a in run_dir.glob(f"{task}_{pattern}/model.tar.gz")]
            n_iters = {
                d: int(d.name.rsplit("_n", 1)[1]) if variant == "distilled_aug" else None
                for d in dirs
            }
            for student_dir in sorted(dirs, key=lambda d: n_iters[d] or 0):
                found[student_dir.name] = {
                    "variant": variant,
                    "vectors": vectors,
                    "n_iter": n_iters[student_dir],
                    "dev": best_dev_accuracy(student_dir),
                }
    return found


def chosen_students(candidates: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    """Per student variant, the directory name with the best dev accuracy (ties: the first, in
    the order of `trained_students`)."""
    chosen: Dict[str, str] = {}
    for name, found in candidates.items():
        best = chosen.get(found["variant"])
        if best is None or found["dev"] > candidates[best]["dev"]:
            chosen[found["variant"]] = name
    return chosen


# ---------------------------------------------------------------------------------------------
# speed


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def interleaved_seconds(runs: Dict[str, Callable[[], Any]], rounds: int) -> Dict[str, List[float]]:
    """
    One warm-up call of every run (not counted), then `rounds` rounds that call every run once,
    in the given order, so that load from other processes hits them alike. Seconds per call.
    """
    seconds: Dict[str, List[float]] = {name: [] for name in runs}
    for round_ in range(rounds + 1):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            if round_:
                seconds[name].append(elapsed)
    return seconds


def speed(results: Dict[str, Any], args, run_dir: Path) -> None:
    """
    Sentences/s of teacher vs student, model forward only (instances tensorised beforehand),
    torch.inference_mode, CPU, the same process, sentences, warm-up and rounds for both; at 1
    and 2 torch threads. Untrained weights of the same architectures (speed does not depend on
    the weights). The student's vocabulary is the chosen SST-2 distilled_aug student's if this
    run dir has one (so `params_student` is the real student's), else the training subset's.
    """
    import torch
    from allennlp.common import Params
    from allennlp.data import Batch, Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    if not task_files("sst2", run_dir)["record"].exists():  # else the SST-2 run's split
        pin_settings("sst2", run_dir, sst2_split_settings(args))
        write_split("sst2", args, run_dir)
    files = task_files("sst2", run_dir)
    os.environ["SST2_TRAIN_DATA_PATH"] = files["train"]
    os.environ["SST2_DEV_DATA_PATH"] = files["dev"]
    timing_data = args.speed_data or os.path.join(sst2_dir(), "test.tsv")
    candidates = trained_students("sst2", run_dir)
    student_vocabulary, student_vectors = None, "random"
    chosen = chosen_students(candidates).get("distilled_aug")
    if chosen is not None:
        student_vocabulary = run_dir / chosen / "vocabulary"
        student_vectors = candidates[chosen]["vectors"]

    def build(config: str, vocabulary_dir: Optional[Path], vocabulary_data: str):
        params = Params.from_file(str(CONFIGS / config))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        if "validation_dataset_reader" in params:
            reader = DatasetReader.from_params(params.pop("validation_dataset_reader"))
        instances = list(reader.read(timing_data))[: args.speed_sentences]
        if vocabulary_dir is not None:
            vocab = Vocabulary.from_files(str(vocabulary_dir))
        else:  # labelled sentences, for the label namespace
            vocab = Vocabulary.from_instances(reader.read(vocabulary_data))
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        model.eval()
        return model, instances

    models = {
        "teacher": build("sst2_teacher.jsonnet", None, files["dev"]),
        "student": build(
            student_config("sst2", "bilstm", student_vectors), student_vocabulary, files["train"]
        ),
    }
    for name, (model, _) in models.items():
        results[f"params_{name}"] = count_parameters(model)
    student = models["student"][0]
    results["params_student_without_embeddings"] = results["params_student"] - count_parameters(
        student.text_field_embedder
    )

    counts = {64: len(models["teacher"][1])}
    counts[1] = min(args.speed_b1_sentences, counts[64])
    runs: Dict[str, Callable[[], Any]] = {}
    for batch_size in (64, 1):
        for name, (model, instances) in models.items():  # teacher, student, teacher, student
            batches = []
            for start in range(0, counts[batch_size], batch_size):
                batch = Batch(instances[start : min(start + batch_size, counts[batch_size])])
                batch.index_instances(model.vocab)
                batches.append(batch.as_tensor_dict())

            def forward(model=model, batches=batches):
                for tensors in batches:
                    model(**tensors)

            runs[f"{name}_b{batch_size}"] = forward

    by_threads: Dict[str, float] = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        assert torch.get_num_threads() == threads
        with torch.inference_mode():
            seconds = interleaved_seconds(runs, args.rounds)
        for key, values in seconds.items():
            batch_size = int(key.rsplit("_b", 1)[1])
            by_threads[f"{key}_threads{threads}"] = round(
                counts[batch_size] / statistics.median(values), 1
            )
        for batch_size in (1, 64):
            ratio = (
                by_threads[f"student_b{batch_size}_threads{threads}"]
                / by_threads[f"teacher_b{batch_size}_threads{threads}"]
            )
            by_threads[f"student_speedup_b{batch_size}_threads{threads}"] = round(ratio, 1)
    torch.set_num_threads(THREADS)
    results["speed_by_threads"] = by_threads
    used = {}
    for name in models:
        for batch_size in (1, 64):
            key = f"{name}_b{batch_size}"
            threads = max((1, 2), key=lambda t: by_threads[f"{key}_threads{t}"])
            used[key] = threads
            results[f"sentences_per_sec_{key}"] = by_threads[f"{key}_threads{threads}"]
    results["speed_threads_used"] = used
    for batch_size in (1, 64):
        ratio = (
            results[f"sentences_per_sec_student_b{batch_size}"]
            / results[f"sentences_per_sec_teacher_b{batch_size}"]
        )
        results[f"student_speedup_b{batch_size}"] = round(ratio, 1)
    results["speed_setup"] = {
        "data": f"the first {counts[64]} sentences of {timing_data} at batch 64, the first "
        f"{counts[1]} at batch 1 (unlabelled; no split a figure is measured on)",
        "timing": f"one warm-up pass of every (model, batch size), then {args.rounds} "
        "interleaved rounds (teacher b64, student b64, teacher b1, student b1); sentences/s "
        "of the median round",
        "threads": "torch.set_num_threads(1), then (2), the same for both models; each "
        "headline sentences_per_sec_* is the model's faster count (speed_threads_used), every "
        "count under speed_by_threads (student_speedup_b*_threads* = same count for both)",
        "what": "model forward only, torch.inference_mode, CPU, one process; untrained weights",
        "student_vocabulary": str(student_vocabulary or files["train"]),
    }
    save_results(results)


# ---------------------------------------------------------------------------------------------
# results file


def keep_earlier_run(results: Dict[str, Any]) -> None:
    """
    A results file from before the held-out splits (dev keys, no `splits` note): its figures
    move under EARLIER_KEY, so that the new run overwrites nothing of them.
    """
    if "splits" in results or not any(k.startswith(("sst2_dev_", "pair_dev_")) for k in results):
        return
    kept = ("earlier_run_weaker_teachers", EARLIER_KEY, "title", "summary")
    earlier = {key: results.pop(key) for key in list(results) if key not in kept}
    earlier["note"] = (
        "the run before the held-out splits: SST-2 students' epochs and n_iter were chosen on "
        "GLUE dev.tsv, on which the sst2_dev_acc_* figures were also measured; SICK's on TRIAL "
        "(pair_dev_acc_*), TEST never used; speed as best of 3 passes at 1 thread and 1 pass "
        "at 2 threads"
    )
    results[EARLIER_KEY] = earlier


# the top-level keys each part writes (besides its run dir, stage seconds and commands)
PART_KEY_PREFIXES = {
    "sst2": ("sst2_",),
    "sick": ("pair_",),
    "speed": ("params_", "sentences_per_sec_", "speed_", "student_speedup_"),
}
# the nested records kept per task, under the task's name
PART_NESTED = ("sizes", "splits", "run_dirs", "test_evaluations")


def previous_run_dir(results: Dict[str, Any], part: str) -> Optional[str]:
    """The run dir this part's figures in `results` came from (the last command that wrote it)."""
    if part in results.get("run_dirs", {}):
        return results["run_dirs"][part]
    commands = results.get("commands", [])
    dirs = [c.get("run_dir") for c in commands if isinstance(c, dict) and c.get("part") == part]
    return dirs[-1] if dirs else None


def keep_earlier_part_run(results: Dict[str, Any], part: str, run_dir: Path) -> None:
    """
    A part ("sst2", "sick" or "speed") run in another run dir than the one its figures came from
    replaces them: the earlier figures, their stage seconds and commands move under
    `earlier_<part>_run_<run dir name>` first, so that nothing measured is lost.
    """
    previous = previous_run_dir(results, part)
    if previous is None or previous == str(run_dir):
        return
    task = "sick" if part == "sick" else "sst2"  # the stage-seconds prefix
    earlier: Dict[str, Any] = {"run_dir": previous}
    for key in list(results):
        if key.startswith(PART_KEY_PREFIXES[part]) or (part == "sick" and key == "pair_task"):
            earlier[key] = results.pop(key)
    for key in PART_NESTED:
        if part in results.get(key, {}):
            earlier[key] = results[key].pop(part)
    seconds = results.get("stage_seconds", {})
    moved = [k for k in seconds if (k == "speed" if part == "speed" else k.startswith(task + "_"))]
    if moved:
        earlier["stage_seconds"] = {k: seconds.pop(k) for k in moved}
    commands = results.get("commands", [])
    if isinstance(commands, list):
        earlier["commands"] = [c for c in commands if c.get("part") == part]
        results["commands"] = [c for c in commands if c.get("part") != part]
    results[f"earlier_{part}_run_{Path(previous).name}"] = earlier


def record_command(results: Dict[str, Any], parts: Sequence[str], run_dir: Path) -> None:
    """Every invocation that wrote figures, in order (`commands`; `command` joins them)."""
    invocation = "python benchmarks/distillation_benchmark.py " + " ".join(sys.argv[1:])
    commands = results.setdefault("commands", [])
    if isinstance(commands, dict):  # the older {part: command} form
        commands = results["commands"] = [
            {"part": part, "command": command} for part, command in commands.items()
        ]
    for part in parts:
        entry = {"part": part, "command": invocation.strip(), "run_dir": str(run_dir)}
        if entry not in commands:
            commands.append(entry)


def title() -> str:
    name = "" if RESULTS_NAME == "distillation" else f" ({RESULTS_NAME})"
    return f"Tang et al. distillation{name}: SST-2 and a pair task (issues 7, 18)"


def summary(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The accuracy and speed tables of BENCHMARKS.md, from the keys of the results file."""
    tasks = [("SST-2", "sst2")]
    if "pair_task" in results:
        tasks.append((results["pair_task"].split(" (")[0], "pair"))
    tables = []
    for split, caption in (
        (
            "test",
            "Held-out test accuracy (%; SST-2: GLUE dev.tsv, SICK: TEST; `sst2_test_split`, "
            "`pair_test_split`), each model evaluated once after all choices were made on dev. "
            "Goals (issue 18): distilled + augmentation >= plain BiLSTM + 4.0 (SST-2) / + 3.0 "
            "(SICK), and within 3.0 of its teacher. Each student's word vectors: "
            "`sizes.<task>.word_vectors`.",
        ),
        (
            "dev",
            "Dev accuracy (%; the selection set: SST-2 dev carved from train, SICK TRIAL; see "
            "`splits`). Best epochs, n_iter and each student's word vectors (random, or with "
            "the GloVe channel: `sizes.<task>.word_vectors`) were chosen on it. Sizes under "
            "`sizes`.",
        ),
    ):
        rows = []
        for task, prefix in tasks:
            row = [task] + [results.get(f"{prefix}_{split}_acc_{v}") for v in VARIANTS]
            row.append(results.get(f"{prefix}_{split}_gain_distilled_aug_over_bilstm"))
            row.append(results.get(f"{prefix}_{split}_gap_teacher_minus_distilled_aug"))
            rows.append(row)
        columns = ["task", "teacher (MiniLM-L6)", "BiLSTM, gold labels", "distilled"]
        columns += ["distilled + augmentation", "gain over BiLSTM", "teacher - student"]
        if any(value is not None for row in rows for value in row[1:]):
            tables.append({"caption": caption, "columns": columns, "rows": rows})
    if results.get("student_speedup_b1") is None:  # a run without the speed stage
        return tables
    speed_rows = []
    for name in ("teacher", "student"):
        speed_rows.append(
            [
                name,
                results.get(f"params_{name}"),
                results.get(f"sentences_per_sec_{name}_b1"),
                results.get(f"sentences_per_sec_{name}_b64"),
            ]
        )
    speed_rows.append(
        [
            "student / teacher",
            None,
            results.get("student_speedup_b1"),
            results.get("student_speedup_b64"),
        ]
    )
    tables.append(
        {
            "caption": "Speed on CPU (sentences/s, model forward only; goals: student >= 10x "
            "the teacher at batch 1, >= 20x at batch 64). Warm-up, median of interleaved "
            "rounds, each model at its faster thread count: `speed_setup`, "
            "`speed_threads_used`, `speed_by_threads`.",
            "columns": ["model", "parameters", "sentences/s b1", "sentences/s b64"],
            "rows": speed_rows,
        }
    )
    return tables


def gains(results: Dict[str, Any]) -> None:
    for prefix in ("sst2", "pair"):
        for split in ("dev", "test"):
            teacher, bilstm, student = (
                results.get(f"{prefix}_{split}_acc_{v}")
                for v in ("teacher", "bilstm", "distilled_aug")
            )
            if bilstm is not None and student is not None:
                key = f"{prefix}_{split}_gain_distilled_aug_over_bilstm"
                results[key] = round(student - bilstm, 2)
            if teacher is not None and student is not None:
                key = f"{prefix}_{split}_gap_teacher_minus_distilled_aug"
                results[key] = round(teacher - student, 2)


def main() -> None:
    global RESULTS_NAME, THREADS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default=str(ROOT / "runs" / "distillation"))
    parser.add_argument(
        "--stage",
        choices=["all", "split", "sst2", "sick", "speed", "report"],
        default="all",
        help="split: only write the split files; report: only recompute the summary tables",
    )
    parser.add_argument("--threads", type=int, default=THREADS, help="threads per subprocess")
    parser.add_argument(
        "--sst2-train-size",
        type=train_size,
        default=8000,
        help="rows of the SST-2 training pool (train.tsv minus the dev), or 'all'",
    )
    parser.add_argument("--sst2-dev-size", type=int, default=2000, help="carved from train.tsv")
    parser.add_argument(
        "--pair-train-size", type=train_size, default=None, help="SICK TRAIN pairs (default all)"
    )
    parser.add_argument("--teacher-epochs", type=int, default=2)
    parser.add_argument("--teacher-lr", type=float, default=5e-5)
    parser.add_argument(
        "--n-iter",
        type=int,
        nargs="+",
        default=[20],
        help="transfer-set sizes to compare (chosen on dev)",
    )
    parser.add_argument("--pair-teacher-epochs", type=int, default=3, help="SICK override")
    parser.add_argument("--pair-n-iter", type=int, nargs="+", default=[8, 20], help="SICK override")
    parser.add_argument("--student-epochs", type=int, default=8)
    parser.add_argument(
        "--student-word-vectors",
        nargs="+",
        choices=WORD_VECTORS,
        default=["random"],
        help="students to train: random trained word vectors, and/or with a frozen GloVe 6B 50d "
        "channel (the better on dev is kept per student)",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--stop-after",
        choices=["teacher", "transfer_set"],
        help="end each task's pipeline after this stage (recorded as sizes.<task>.stopped_after); "
        "re-running without it continues from there",
    )
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="speed: timed rounds")
    parser.add_argument("--speed-data", help="speed: TSV of sentences (default SST-2 test.tsv)")
    parser.add_argument("--speed-sentences", type=int, default=872, help="speed: at batch 64")
    parser.add_argument("--speed-b1-sentences", type=int, default=100, help="speed: at batch 1")
    parser.add_argument(
        "--results",
        default=RESULTS_NAME,
        help="results file name under benchmarks/results/ (without .json)",
    )
    args = parser.parse_args()
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds: at least {MIN_ROUNDS} (the median of >= 5 interleaved rounds)")
    if min(args.n_iter + (args.pair_n_iter or [])) < 1:
        parser.error("--n-iter / --pair-n-iter: at least 1 (n_iter 0 is the distilled variant)")
    THREADS = args.threads
    RESULTS_NAME = args.results
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)

    results = load_results()
    if args.stage == "report":
        save_results(results, finish=finish_results)
        return
    if args.stage == "split":
        for task in ("sst2", "sick"):
            settings = sst2_split_settings(args) if task == "sst2" else sick_split_settings(args)
            pin_settings(task, run_dir, settings)
            write_split(task, args, run_dir)
            print(json.dumps({task: task_files(task, run_dir)}, default=str, indent=1))
        return
    keep_earlier_run(results)
    results.setdefault("splits", {})["keys"] = (
        "<p>_dev_acc_* = best accuracy on the dev split (SST-2: carved from train.tsv; SICK: "
        "TRIAL), on which every choice was made; <p>_test_acc_* = the held-out test (SST-2: "
        "GLUE dev.tsv; SICK: TEST), evaluated once per final model at the end; figures from "
        f"before these splits: {EARLIER_KEY}"
    )
    if args.stage in ("all", "speed"):  # the speed figures are the ones the machine matters for
        results["hardware"] = hardware()
    # the settings every task shares; each task's own (n_iter, teacher epochs, train size) are
    # under "sizes", as the tasks may come from different invocations
    results["settings"] = {
        k: getattr(args, k) for k in ("seed", "student_epochs", "teacher_lr", "threads")
    }
    save_results(results)
    parts = [p for p in ("sst2", "sick", "speed") if args.stage in ("all", p)]
    for part in parts:
        keep_earlier_part_run(results, part, run_dir)
    if "speed" in parts:
        results.setdefault("run_dirs", {})["speed"] = str(run_dir)
    if "sst2" in parts:
        task_pipeline("sst2", args, results, run_dir)
    if "sick" in parts:
        task_pipeline("sick", args, results, run_dir)
    if "speed" in parts:  # after SST-2, whose student vocabulary it uses
        timed(results, "speed", lambda: speed(results, args, run_dir) or True, run_dir)
    record_command(results, parts, run_dir)
    written = save_results(results, finish=finish_results)
    print(json.dumps(written, indent=2, sort_keys=True))


def finish_results(results: Dict[str, Any]) -> None:
    """The keys derived from all tasks' figures, recomputed on the file as saved."""
    gains(results)
    results["title"] = title()
    commands = results.get("commands", [])
    results["command"] = "; ".join(dict.fromkeys(entry["command"] for entry in commands))
    results["summary"] = summary(results)


if __name__ == "__main__":
    main()
