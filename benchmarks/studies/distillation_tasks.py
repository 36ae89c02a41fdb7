"""
The distillation study's steps on the shared `Pipeline`: per task (stages `sst2`, `sick`) split,
teacher, transfer sets, students, the choice on dev, and last the held-out test, read by no step
before; then `speed`: sentences/s of teacher and student on CPU at batch 1 and 64, model forward
only, timed in one process at 1 and 2 torch threads (each headline the model's faster count).
"""

import argparse
import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.results import load_results, write_results
from benchmarks.harness.runs import pin_settings
from benchmarks.studies import distillation_data as data
from benchmarks.studies.distillation_pipeline import Pipeline, forward
from benchmarks.studies.distillation_pipeline import speed as timed_speed


@dataclass
class Run:
    """One invocation's results and run dir. Tasks may write the results side by side: each
    save writes only this run's changes since its last load or save (`write_results(since=)`)."""

    args: argparse.Namespace
    run_dir: Path
    results: Dict[str, Any]
    since: Dict[str, Any]

    @classmethod
    def open(cls, args: argparse.Namespace) -> "Run":
        Path(args.run_dir).mkdir(parents=True, exist_ok=True)
        results = load_results(args.results)
        return cls(args, Path(args.run_dir), results, copy.deepcopy(results))

    def save(self, finish: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        written = write_results(self.args.results, self.results, since=self.since, finish=finish)
        self.since = copy.deepcopy(self.results)
        return written

    def pipeline(self, name: str, env: Optional[Dict[str, str]] = None) -> Pipeline:
        """Part `name`'s pipeline: after every step, its seconds in `stage_seconds`, saved."""

        def on_step() -> None:
            self.results.setdefault("stage_seconds", {}).update(pipe.seconds)
            self.save()

        log = self.run_dir / "logs" / f"{name}.log"
        pipe = Pipeline(self.run_dir, log, self.args.threads, dict(env or {}), on_step)
        return pipe


@dataclass
class Task:
    """What one task's steps share; `pipe.env` is what training, labelling and selection may
    read (never the test)."""

    name: str  # "sst2" or "sick"
    prefix: str  # of its results keys: "sst2" or "pair"
    files: Dict[str, Any]
    sizes: Dict[str, Any]  # results["sizes"][name]
    pipe: Pipeline

    @property
    def upper(self) -> str:
        return "SST2" if self.name == "sst2" else "SICK"

    def transfer_set(self, run_dir: Path, n_iter: int) -> Path:
        return run_dir / "transfer" / f"{self.name}_aug_n{n_iter}.jsonl"


def count_rows(path: Path) -> int:
    """The rows of a transfer set (its lines after the header)."""
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle) - 1


def test_accuracy(model_dir: Path) -> float:
    return round(100.0 * json.loads((model_dir / "test_metrics.json").read_text())["accuracy"], 2)


def task_pipeline(task: str, run: Run) -> None:
    """A task's steps in order; `--stop-after` ends after the teacher or the transfer sets
    (recorded as `sizes.<task>.stopped_after`; a re-run without it goes on from there)."""
    args = run.args
    pair = task != "sst2"
    n_iters = sorted(set(args.pair_n_iter if pair and args.pair_n_iter else args.n_iter))
    job = split_task(task, run)
    train_teacher(job, run)
    if args.stop_after != "teacher":
        transfer_sets(job, run, n_iters)
        if args.stop_after != "transfer_set":
            train_students(job, run, n_iters)
            test_evaluation(job, run, choose_on_dev(job, run))
            return
        rows = {str(n): count_rows(job.transfer_set(run.run_dir, n)) for n in n_iters}
        job.sizes["transfer_set_rows_aug_by_n_iter"] = rows
    job.sizes["stopped_after"] = args.stop_after
    run.save()


def split_task(task: str, run: Run) -> Task:
    """The task's split (written once), its sizes and notes in the results."""
    args, results, pair = run.args, run.results, task != "sst2"
    files = data.task_files(task, run.run_dir)
    if pair:
        env = {"SICK_DATA_PATH": data.sick_path()}  # the configs' dev: its TRIAL rows
    else:
        env = {"SST2_TRAIN_DATA_PATH": files["train"], "SST2_DEV_DATA_PATH": files["dev"]}
    sizes = results.setdefault("sizes", {})[task] = {}
    job = Task(task, "pair" if pair else "sst2", files, sizes, run.pipeline(task, env))
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


def transfer_sets(job: Task, run: Run, n_iters: List[int]) -> None:
    """The augmented transfer set per n_iter (`allennlp ldnet-distill-transfer-set`) and the
    un-augmented one: the originals of the first, with n_iter 0 in its header."""
    teacher = run.run_dir / f"{job.name}_teacher" / "model.tar.gz"
    plain = run.run_dir / "transfer" / f"{job.name}.jsonl"
    for n_iter in n_iters:
        path = job.transfer_set(run.run_dir, n_iter)
        command = ["ldnet-distill-transfer-set", str(teacher), job.files["train"], str(path)]
        command += ["--n-iter", str(n_iter), "--seed", str(run.args.seed), "--batch-size", "64"]
        job.pipe.label(f"{job.name}_transfer_set_n{n_iter}", command, path)
        if not plain.exists():
            partial = plain.with_name(plain.name + ".partial")
            with open(path, encoding="utf-8") as source, open(
                partial, "w", encoding="utf-8"
            ) as out:
                header = json.loads(source.readline())
                header["transfer_set"].update(n_iter=0, derived_from=str(path))
                out.write(json.dumps(header) + "\n")
                out.writelines(line for line in source if not json.loads(line)["augmented"])
            os.replace(partial, plain)
    job.sizes["transfer_set_rows_plain"] = count_rows(plain)
    job.pipe.env[f"{job.upper}_TRANSFER_SET"] = str(plain)


def train_students(job: Task, run: Run, n_iters: List[int]) -> None:
    """The three students per word-vector channel (distilled + augmentation per n_iter)."""
    epochs = run.args.student_epochs
    pin_settings(run.run_dir, {"student_epochs": epochs}, name=f"{job.name}_settings")
    students = [("bilstm", None), ("distilled", None)] + [("distilled_aug", n) for n in n_iters]
    for vectors in run.args.student_word_vectors:
        for variant, n_iter in students:
            name = data.student_name(variant, n_iter, vectors)
            config = data.CONFIGS / data.student_config(job.name, variant, vectors)
            overrides: Dict[str, Any] = {"trainer.num_epochs": epochs}
            if variant == "bilstm":
                overrides["train_data_path"] = job.files["train"]
            env = {}
            if n_iter is not None:
                env[f"{job.upper}_TRANSFER_SET_AUG"] = str(job.transfer_set(run.run_dir, n_iter))
            out = run.run_dir / f"{job.name}_{name}"
            job.pipe.train(f"{job.name}_student_{name}", config, out, overrides, env)


def choose_on_dev(job: Task, run: Run) -> Dict[str, Path]:
    """Per student, the best dev accuracy among every n_iter and word-vector channel trained in
    this run dir (ties: random vectors, then the smaller n_iter); returns the four final models'
    directories by variant."""
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
    sizes["transfer_set_rows_aug_by_n_iter"] = {  # also those of earlier invocations
        str(n): count_rows(job.transfer_set(run.run_dir, n)) for n in by_n_iter
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
    split = f"{name}: {job.files['test']} ({len(test_rows)} examples)"
    run.results[f"{job.prefix}_test_split"] = split
    # every model of this run dir scored on the test (more than the four finals only if a
    # later invocation with more n_iter values changed the dev choice)
    run.results.setdefault("test_evaluations", {})[job.name] = {
        path.parent.name: test_accuracy(path.parent)
        for path in sorted(run.run_dir.glob(f"{job.name}_*/test_metrics.json"))
    }
    run.save()


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def speed_models(run: Run, timing_data: str) -> Dict[str, Any]:
    """
    Teacher and student, each a (model, instances) pair, with untrained weights (speed does not
    depend on them); each reads the timing sentences with its own reader. The student has the
    vocabulary of the chosen SST-2 distilled_aug student if this run dir has one (so that
    `params_student` is the real student's), else one built from the training split.
    """
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the teacher's transformer, from the cache
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    files = data.task_files("sst2", run.run_dir)
    if not files["record"].exists():  # else the SST-2 run's split
        data.split_once("sst2", run.args, run.run_dir)
    os.environ.update(SST2_TRAIN_DATA_PATH=files["train"], SST2_DEV_DATA_PATH=files["dev"])
    candidates = data.trained_students("sst2", run.run_dir)
    chosen = data.chosen_students(candidates).get("distilled_aug")
    vocabulary = None if chosen is None else run.run_dir / chosen / "vocabulary"
    vectors = "random" if chosen is None else candidates[chosen]["vectors"]
    run.results["speed_setup"] = {"student_vocabulary": str(vocabulary or files["train"])}

    def build(config: str, vocabulary_data: str):
        params = Params.from_file(str(data.CONFIGS / config))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        if "validation_dataset_reader" in params:
            reader = DatasetReader.from_params(params.pop("validation_dataset_reader"))
        instances = list(reader.read(timing_data))[: run.args.speed_sentences]
        if config != "sst2_teacher.jsonnet" and vocabulary is not None:
            vocab = Vocabulary.from_files(str(vocabulary))
        else:  # labelled sentences, for the label namespace
            vocab = Vocabulary.from_instances(reader.read(vocabulary_data))
        return Model.from_params(vocab=vocab, params=params.pop("model")).eval(), instances

    student = data.student_config("sst2", "bilstm", vectors)
    return {
        "teacher": build("sst2_teacher.jsonnet", files["dev"]),
        "student": build(student, files["train"]),
    }


def tensorised(model, instances, count: int, batch_size: int) -> List[Dict[str, Any]]:
    """The first `count` instances as `model`'s input tensors, in batches of `batch_size`."""
    from allennlp.data import Batch

    batches = []
    for start in range(0, count, batch_size):
        batch = Batch(instances[start : min(start + batch_size, count)])
        batch.index_instances(model.vocab)
        batches.append(batch.as_tensor_dict())
    return batches


def speed(run: Run) -> None:
    """Sentences/s of teacher vs student: the same process, sentences, warm-up and rounds for
    both, in the order teacher b64, student b64, teacher b1, student b1; at 1 and 2 threads."""
    args, results = run.args, run.results
    timing_data = args.speed_data or os.path.join(data.sst2_dir(), "test.tsv")
    models = speed_models(run, timing_data)
    for name, (model, _) in models.items():
        results[f"params_{name}"] = count_parameters(model)
    embedder = count_parameters(models["student"][0].text_field_embedder)
    results["params_student_without_embeddings"] = results["params_student"] - embedder
    counts = {64: len(models["teacher"][1])}
    counts[1] = min(args.speed_b1_sentences, counts[64])
    cases = {
        f"{name}_b{b}": forward([(model, tensorised(model, instances, counts[b], b))])
        for b in (64, 1)
        for name, (model, instances) in models.items()
    }
    work = {key: counts[int(key.rsplit("_b", 1)[1])] for key in cases}
    by_threads: Dict[str, float] = {}
    for threads in (1, 2):
        rates, _ = timed_speed(cases, work, args.rounds, threads)
        by_threads.update({f"{k}_threads{threads}": round(v, 1) for k, v in rates.items()})
        for key in (f"b{b}_threads{threads}" for b in (1, 64)):
            ratio = by_threads[f"student_{key}"] / by_threads[f"teacher_{key}"]
            by_threads[f"student_speedup_{key}"] = round(ratio, 1)
    used = {key: max((1, 2), key=lambda t: by_threads[f"{key}_threads{t}"]) for key in cases}
    results.update(speed_by_threads=by_threads, speed_threads_used=used)
    for key, threads in used.items():
        results[f"sentences_per_sec_{key}"] = by_threads[f"{key}_threads{threads}"]
    for b in (1, 64):
        ratio = (
            results[f"sentences_per_sec_student_b{b}"] / results[f"sentences_per_sec_teacher_b{b}"]
        )
        results[f"student_speedup_b{b}"] = round(ratio, 1)
    results["speed_setup"].update(
        data=f"the first {counts[64]} sentences of {timing_data} at batch 64, the first "
        f"{counts[1]} at batch 1 (unlabelled; no split a figure is measured on)",
        timing=f"one warm-up pass of every (model, batch size), then {args.rounds} "
        "interleaved rounds (teacher b64, student b64, teacher b1, student b1); sentences/s "
        "of the median round",
        threads="torch.set_num_threads(1), then (2), the same for both models; each "
        "headline sentences_per_sec_* is the model's faster count (speed_threads_used), every "
        "count under speed_by_threads (student_speedup_b*_threads* = same count for both)",
        what="model forward only, torch.inference_mode, CPU, one process; untrained weights",
    )
    run.save()
