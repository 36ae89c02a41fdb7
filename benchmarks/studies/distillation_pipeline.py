"""
The distillation study's per-task pipeline and speed timing (`benchmarks/studies/distillation.py`
runs them): split, teacher, transfer sets, students, the choice on dev, and last the held-out
test, read by no step before. Each step is skipped when its outputs are there, an interrupted
`allennlp train` continued (`harness.allennlp.train`), and its wall time kept once
(`harness.runs.timed_once`).
"""

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.results import SharedResults
from benchmarks.harness.runs import timed_once
from benchmarks.studies import distillation_data as data


@dataclass
class Run:
    """One invocation's results (`SharedResults`: tasks may write side by side) and run dir."""

    args: argparse.Namespace
    run_dir: Path
    shared: SharedResults
    results: Dict[str, Any]

    @classmethod
    def open(cls, args: argparse.Namespace) -> "Run":
        run_dir = Path(args.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        shared = SharedResults(args.results)
        return cls(args, run_dir, shared, shared.load())

    def save(self, finish: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        return self.shared.save(self.results, finish)

    def timed(self, name: str, work: Callable[[], bool]) -> None:
        """Runs `work`, keeps its wall time under `stage_seconds` (`timed_once`), and saves."""
        seconds = timed_once(self.run_dir, name, work)
        if seconds is not None:
            self.results.setdefault("stage_seconds", {})[name] = seconds
        self.save()


@dataclass
class Task:
    """What one task's steps share: its names, split files, data environment and log."""

    name: str  # "sst2" or "sick"
    prefix: str  # of its results keys: "sst2" or "pair"
    files: Dict[str, Any]
    env: Dict[str, str]  # what training, labelling and selection may read (never the test)
    log: Path
    sizes: Dict[str, Any]  # results["sizes"][name]
    n_iters: List[int]

    @property
    def upper(self) -> str:
        return "SST2" if self.name == "sst2" else "SICK"


def test_accuracy(model_dir: Path) -> float:
    return round(100.0 * json.loads((model_dir / "test_metrics.json").read_text())["accuracy"], 2)


def count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle)


def task_pipeline(task: str, run: Run) -> None:
    """A task's steps in order; `--stop-after` ends after the teacher or the transfer sets
    (recorded as `sizes.<task>.stopped_after`; a re-run without it goes on from there)."""
    job = split_task(task, run)
    train_teacher(job, run)
    if run.args.stop_after != "teacher":
        transfer = transfer_sets(job, run)
        if run.args.stop_after != "transfer_set":
            train_students(job, run, transfer)
            finals = choose_on_dev(job, run)
            test_evaluation(job, run, finals)
            return
        job.sizes["transfer_set_rows_aug_by_n_iter"] = {
            str(n): count_lines(path) - 1 for n, path in transfer.items()
        }
    # where a budget stops the pipeline: a re-run without --stop-after goes on from here
    job.sizes["stopped_after"] = run.args.stop_after
    run.save()


def split_task(task: str, run: Run) -> Task:
    """The task's split (written once), its sizes and notes in the results."""
    args, results, pair = run.args, run.results, task != "sst2"
    files = data.task_files(task, run.run_dir)
    if pair:
        env = {"SICK_DATA_PATH": data.sick_path()}  # the configs' dev: its TRIAL rows
    else:
        env = {"SST2_TRAIN_DATA_PATH": files["train"], "SST2_DEV_DATA_PATH": files["dev"]}
    n_iters = sorted(set(args.pair_n_iter if pair and args.pair_n_iter else args.n_iter))
    results.setdefault("run_dirs", {})[task] = str(run.run_dir)
    sizes = results.setdefault("sizes", {})[task] = {}
    job = Task(task, "pair" if pair else "sst2", files, env, run.run_dir / "logs" / f"{task}.log",
               sizes, n_iters)  # fmt: skip
    data.pin_task_settings(task, run.run_dir, data.split_settings(task, args))
    run.timed(f"{task}_split", lambda: data.write_split(task, args, run.run_dir))
    split = json.loads(files["record"].read_text())
    sizes.update({k: v for k, v in split.items() if k not in ("seed", "train_rows")})
    sizes["train_examples"] = split["train_rows"]
    results.setdefault("splits", {})[task] = data.split_note(task, args, split)
    if pair:
        results["pair_task"] = (
            f"SICK 3-way (train = {split['train_rows']} SemEval_set TRAIN pairs, dev = TRIAL, "
            "test = TEST)"
        )
    results[f"{job.prefix}_dev_split"] = files["dev"]
    return job


def train_teacher(job: Task, run: Run) -> None:
    """Fine-tunes the teacher (best epoch on dev); its dev accuracy and what an epoch cost."""
    args = run.args
    epochs = (args.pair_teacher_epochs if job.name != "sst2" else None) or args.teacher_epochs
    teacher_dir = run.run_dir / f"{job.name}_teacher"
    data.pin_task_settings(
        job.name, run.run_dir, {"teacher_epochs": epochs, "teacher_lr": args.teacher_lr}
    )
    overrides = {"train_data_path": job.files["train"], "trainer.num_epochs": epochs}
    overrides["trainer.optimizer.lr"] = args.teacher_lr
    config = data.CONFIGS / f"{job.name}_teacher.jsonnet"
    run.timed(
        f"{job.name}_teacher_finetune",
        lambda: allennlp.train(config, teacher_dir, job.log, overrides, job.env, args.threads),
    )
    run.results[f"{job.prefix}_dev_acc_teacher"] = data.best_dev_accuracy(teacher_dir)
    job.sizes["teacher_epochs"] = epochs
    first_epoch = teacher_dir / "metrics_epoch_0.json"
    if first_epoch.exists():  # what one teacher epoch costs (training + dev), to size a run
        text = json.loads(first_epoch.read_text())["training_duration"]
        seconds = allennlp.duration_seconds(text)
        job.sizes["teacher_seconds_epoch_0"] = round(seconds, 1)
        per_1k = 1000 * seconds / job.sizes["train_examples"]
        job.sizes["teacher_seconds_per_epoch_per_1k_train"] = round(per_1k, 1)
    if args.stop_after != "teacher":
        run.save()


def transfer_sets(job: Task, run: Run) -> Dict[int, Path]:
    """The augmented transfer set per n_iter (`allennlp ldnet-distill-transfer-set`, resumable) and
    the un-augmented one (its originals); returns the augmented ones' paths by n_iter."""
    teacher = run.run_dir / f"{job.name}_teacher" / "model.tar.gz"
    plain = run.run_dir / "transfer" / f"{job.name}.jsonl"
    paths = {n: run.run_dir / "transfer" / f"{job.name}_aug_n{n}.jsonl" for n in job.n_iters}
    for n_iter, path in paths.items():

        def label(path: Path = path, n_iter: int = n_iter) -> bool:
            done = path.with_suffix(".done")
            if done.exists():
                return False
            path.parent.mkdir(parents=True, exist_ok=True)
            command = ["ldnet-distill-transfer-set", str(teacher), job.files["train"], str(path)]
            command += ["--n-iter", str(n_iter), "--seed", str(run.args.seed)]
            allennlp.run_allennlp(
                command + ["--batch-size", "64"], job.log, job.env, threads=run.args.threads
            )
            done.write_text("done\n")
            return True

        run.timed(f"{job.name}_transfer_set_n{n_iter}", label)
        if not plain.exists():  # the originals, labelled by the same teacher
            only_originals(path, plain)
    job.sizes["transfer_set_rows_plain"] = count_lines(plain) - 1
    if run.args.stop_after != "transfer_set":
        run.save()
    job.env[f"{job.upper}_TRANSFER_SET"] = str(plain)
    return paths


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


def train_students(job: Task, run: Run, transfer: Dict[int, Path]) -> None:
    """The three students per word-vector channel (distilled + augmentation per n_iter)."""
    args = run.args
    data.pin_task_settings(job.name, run.run_dir, {"student_epochs": args.student_epochs})
    students = []
    for vectors in args.student_word_vectors:
        students += [("bilstm", None, vectors), ("distilled", None, vectors)]
        students += [("distilled_aug", n, vectors) for n in job.n_iters]
    for variant, n_iter, vectors in students:
        name = data.student_name(variant, n_iter, vectors)
        student_dir = run.run_dir / f"{job.name}_{name}"
        config = data.CONFIGS / data.student_config(job.name, variant, vectors)
        overrides: Dict[str, Any] = {"trainer.num_epochs": args.student_epochs}
        if variant == "bilstm":
            overrides["train_data_path"] = job.files["train"]
        env = dict(job.env)
        if n_iter is not None:
            env[f"{job.upper}_TRANSFER_SET_AUG"] = str(transfer[n_iter])

        def student(student_dir=student_dir, config=config, overrides=overrides, env=env):
            return allennlp.train(config, student_dir, job.log, overrides, env, args.threads)

        run.timed(f"{job.name}_student_{name}", student)


def choose_on_dev(job: Task, run: Run) -> Dict[str, Path]:
    """
    Per student, the best dev accuracy among every n_iter and word-vector channel trained in
    this run dir (ties: random vectors, then the smaller n_iter); returns the four final models'
    directories by variant.
    """
    results, prefix, sizes = run.results, job.prefix, job.sizes
    candidates = data.trained_students(job.name, run.run_dir)
    finals = data.chosen_students(candidates)
    results[f"{prefix}_dev_acc_by_student"] = {n: found["dev"] for n, found in candidates.items()}
    for variant in data.STUDENT_VARIANTS:
        results[f"{prefix}_dev_acc_{variant}"] = candidates[finals[variant]]["dev"]
    sizes["word_vectors"] = {v: candidates[finals[v]]["vectors"] for v in data.STUDENT_VARIANTS}
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
    transfer = run.run_dir / "transfer"
    sizes["transfer_set_rows_aug_by_n_iter"] = {  # also those of earlier invocations
        str(n): count_lines(transfer / f"{job.name}_aug_n{n}.jsonl") - 1 for n in by_n_iter
    }
    sizes["transfer_set_rows_aug"] = sizes["transfer_set_rows_aug_by_n_iter"][str(chosen)]
    run.save()
    teacher = {"teacher": run.run_dir / f"{job.name}_teacher"}
    return {**teacher, **{v: run.run_dir / finals[v] for v in data.STUDENT_VARIANTS}}


def test_evaluation(job: Task, run: Run, finals: Dict[str, Path]) -> None:
    """The held-out test: once, for the four final models, after everything else."""

    def evaluate() -> bool:
        missing = [d for d in finals.values() if not (d / "test_metrics.json").exists()]
        for model_dir in missing:
            archive, output = model_dir / "model.tar.gz", model_dir / "test_metrics.json"
            allennlp.evaluate(
                archive, job.files["test"], output, job.log, env=job.env, threads=run.args.threads
            )
        return bool(missing)

    run.timed(f"{job.name}_test_evaluation", evaluate)
    for variant, model_dir in finals.items():
        run.results[f"{job.prefix}_test_acc_{variant}"] = test_accuracy(model_dir)
    _, test_rows = data.read_tsv(job.files["test"])  # counted only now, after the evaluation
    name = "GLUE SST-2 dev.tsv" if job.name == "sst2" else "SICK.txt, SemEval_set TEST"
    test_split = f"{name}: {job.files['test']} ({len(test_rows)} examples)"
    run.results[f"{job.prefix}_test_split"] = test_split
    # every model of this run dir that was ever scored on the test (more than the four finals
    # only if a later invocation with more n_iter values changed the dev choice)
    run.results.setdefault("test_evaluations", {})[job.name] = {
        path.parent.name: test_accuracy(path.parent)
        for path in sorted(run.run_dir.glob(f"{job.name}_*/test_metrics.json"))
    }
    run.save()
