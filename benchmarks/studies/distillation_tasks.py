"""
The steps of one distillation task (`distillation.py`'s stages `sst2` and `sick`) on the shared
`Pipeline`: split, teacher, transfer sets, students, the choice on dev, and last the held-out
test, read by no step before.
"""

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.results import SharedResults
from benchmarks.harness.runs import pin_settings
from benchmarks.studies import distillation_data as data
from benchmarks.studies.distillation_pipeline import Pipeline


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

    def pipeline(self, name: str, env: Optional[Dict[str, str]] = None) -> Pipeline:
        """The pipeline of part `name`: the results saved after every step, with its wall seconds
        under `stage_seconds`."""

        def on_step() -> None:
            self.results.setdefault("stage_seconds", {}).update(pipe.seconds)
            self.save()

        log = self.run_dir / "logs" / f"{name}.log"
        pipe = Pipeline(self.run_dir, log, self.args.threads, dict(env or {}), on_step)
        return pipe


@dataclass
class Task:
    """What one task's steps share: its names, split files, sizes and pipeline."""

    name: str  # "sst2" or "sick"
    prefix: str  # of its results keys: "sst2" or "pair"
    files: Dict[str, Any]
    sizes: Dict[str, Any]  # results["sizes"][name]
    n_iters: List[int]
    pipe: Pipeline  # its env: what training, labelling and selection may read (never the test)

    @property
    def upper(self) -> str:
        return "SST2" if self.name == "sst2" else "SICK"


def count_rows(path: Path) -> int:
    """The rows of a transfer set (its lines after the header)."""
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle) - 1


def test_accuracy(model_dir: Path) -> float:
    return round(100.0 * json.loads((model_dir / "test_metrics.json").read_text())["accuracy"], 2)


def task_pipeline(task: str, run: Run) -> None:
    """A task's steps in order; `--stop-after` ends after the teacher or the transfer sets
    (recorded as `sizes.<task>.stopped_after`; a re-run without it goes on from there)."""
    job = split_task(task, run)
    train_teacher(job, run)
    if run.args.stop_after != "teacher":
        transfer = transfer_sets(job, run)
        if run.args.stop_after != "transfer_set":
            train_students(job, run, transfer)
            test_evaluation(job, run, choose_on_dev(job, run))
            return
        job.sizes["transfer_set_rows_aug_by_n_iter"] = {
            str(n): count_rows(path) for n, path in transfer.items()
        }
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
    sizes = results.setdefault("sizes", {})[task] = {}
    job = Task(task, "pair" if pair else "sst2", files, sizes, n_iters, run.pipeline(task, env))
    job.pipe.step(f"{task}_split", lambda: data.split_once(task, args, run.run_dir))
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
    settings = {"teacher_epochs": epochs, "teacher_lr": args.teacher_lr}
    pin_settings(run.run_dir, settings, name=f"{job.name}_settings")
    overrides = {"train_data_path": job.files["train"], "trainer.num_epochs": epochs}
    overrides["trainer.optimizer.lr"] = args.teacher_lr
    config = data.CONFIGS / f"{job.name}_teacher.jsonnet"
    job.pipe.train(f"{job.name}_teacher_finetune", config, teacher_dir, overrides)
    run.results[f"{job.prefix}_dev_acc_teacher"] = data.best_dev_accuracy(teacher_dir)
    job.sizes["teacher_epochs"] = epochs
    first_epoch = teacher_dir / "metrics_epoch_0.json"
    if first_epoch.exists():  # what one teacher epoch costs (training + dev), to size a run
        text = json.loads(first_epoch.read_text())["training_duration"]
        seconds = allennlp.duration_seconds(text)
        job.sizes["teacher_seconds_epoch_0"] = round(seconds, 1)
        per_1k = 1000 * seconds / job.sizes["train_examples"]
        job.sizes["teacher_seconds_per_epoch_per_1k_train"] = round(per_1k, 1)


def transfer_sets(job: Task, run: Run) -> Dict[int, Path]:
    """The augmented transfer set per n_iter (`allennlp ldnet-distill-transfer-set`, resumable)
    and the un-augmented one (its originals); returns the augmented ones' paths by n_iter."""
    teacher = run.run_dir / f"{job.name}_teacher" / "model.tar.gz"
    plain = run.run_dir / "transfer" / f"{job.name}.jsonl"
    paths = {n: run.run_dir / "transfer" / f"{job.name}_aug_n{n}.jsonl" for n in job.n_iters}
    for n_iter, path in paths.items():
        command = ["ldnet-distill-transfer-set", str(teacher), job.files["train"], str(path)]
        command += ["--n-iter", str(n_iter), "--seed", str(run.args.seed), "--batch-size", "64"]
        job.pipe.label(f"{job.name}_transfer_set_n{n_iter}", command, path)
        if not plain.exists():  # the originals, labelled by the same teacher
            only_originals(path, plain)
    job.sizes["transfer_set_rows_plain"] = count_rows(plain)
    job.pipe.env[f"{job.upper}_TRANSFER_SET"] = str(plain)
    return paths


def only_originals(aug_path: Path, target: Path) -> None:
    """The un-augmented transfer set: header (n_iter set to 0) + the original rows."""
    partial = target.with_name(target.name + ".partial")
    with open(aug_path, encoding="utf-8") as source, open(partial, "w", encoding="utf-8") as out:
        header = json.loads(source.readline())
        header["transfer_set"].update(n_iter=0, derived_from=str(aug_path))
        out.write(json.dumps(header) + "\n")
        out.writelines(line for line in source if not json.loads(line)["augmented"])
    os.replace(partial, target)


def train_students(job: Task, run: Run, transfer: Dict[int, Path]) -> None:
    """The three students per word-vector channel (distilled + augmentation per n_iter)."""
    epochs = run.args.student_epochs
    pin_settings(run.run_dir, {"student_epochs": epochs}, name=f"{job.name}_settings")
    for vectors in run.args.student_word_vectors:
        students = [("bilstm", None), ("distilled", None)]
        for variant, n_iter in students + [("distilled_aug", n) for n in job.n_iters]:
            name = data.student_name(variant, n_iter, vectors)
            config = data.CONFIGS / data.student_config(job.name, variant, vectors)
            overrides: Dict[str, Any] = {"trainer.num_epochs": epochs}
            if variant == "bilstm":
                overrides["train_data_path"] = job.files["train"]
            env = {} if n_iter is None else {f"{job.upper}_TRANSFER_SET_AUG": str(transfer[n_iter])}
            out = run.run_dir / f"{job.name}_{name}"
            job.pipe.train(f"{job.name}_student_{name}", config, out, overrides, env)


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
    by_n_iter = {
        found["n_iter"]: found["dev"]
        for found in candidates.values()
        if found["variant"] == "distilled_aug"
        and found["vectors"] == sizes["word_vectors"]["distilled_aug"]
    }
    chosen = candidates[finals["distilled_aug"]]["n_iter"]
    results[f"{prefix}_dev_acc_distilled_aug_by_n_iter"] = {str(n): by_n_iter[n] for n in by_n_iter}
    sizes["n_iter"], sizes["n_iter_compared"] = chosen, sorted(by_n_iter)
    transfer = run.run_dir / "transfer"
    sizes["transfer_set_rows_aug_by_n_iter"] = {  # also those of earlier invocations
        str(n): count_rows(transfer / f"{job.name}_aug_n{n}.jsonl") for n in by_n_iter
    }
    sizes["transfer_set_rows_aug"] = sizes["transfer_set_rows_aug_by_n_iter"][str(chosen)]
    run.save()
    finals["teacher"] = f"{job.name}_teacher"
    return {v: run.run_dir / finals[v] for v in data.VARIANTS}


def test_evaluation(job: Task, run: Run, finals: Dict[str, Path]) -> None:
    """The held-out test: once, for the four final models, after everything else."""
    archives = {variant: model_dir / "model.tar.gz" for variant, model_dir in finals.items()}
    job.pipe.test(f"{job.name}_test_evaluation", archives, job.files["test"])
    for variant, model_dir in finals.items():
        run.results[f"{job.prefix}_test_acc_{variant}"] = test_accuracy(model_dir)
    _, test_rows = data.read_tsv(job.files["test"])  # counted only now, after the evaluation
    name = "GLUE SST-2 dev.tsv" if job.name == "sst2" else "SICK.txt, SemEval_set TEST"
    run.results[f"{job.prefix}_test_split"] = (
        f"{name}: {job.files['test']} ({len(test_rows)} examples)"
    )
    # every model of this run dir ever scored on the test (more than the four finals only if a
    # later invocation with more n_iter values changed the dev choice)
    run.results.setdefault("test_evaluations", {})[job.name] = {
        path.parent.name: test_accuracy(path.parent)
        for path in sorted(run.run_dir.glob(f"{job.name}_*/test_metrics.json"))
    }
    run.save()
