"""
Tang et al. (2019) distillation on SST-2 and SICK (3-way pairs) through the shared pipeline
(`distillation_pipeline.py`). Stages `sst2` and `sick` (a `Task`'s steps): split, fine-tune the
MiniLM-L6 teacher, build the augmented transfer set per `--n-iter`, train the students
(`bilstm`, `distilled`, `distilled_aug`; with `--student-word-vectors glove` also with a frozen
GloVe channel), choose on dev (`<p>_dev_acc_*`), evaluate the four final models once on the
test (`<p>_test_acc_*`; p = sst2 or pair). `speed` times teacher vs student (with the SST-2
run's `--run-dir`); `split` only writes the splits. A re-run skips finished steps; the settings
its outputs depend on are pinned in <run-dir>/<task>_settings.json.

    SST2_DATA_DIR=../shared/data/sst2 SICK_DATA_PATH=../shared/data/sick/SICK.txt \\
        python -m benchmarks distillation --stage sst2 --run-dir runs/d_sst2
"""

import argparse
import copy
import json
import os
import random
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from benchmarks.harness import allennlp
from benchmarks.harness.data import ROOT, data_path, hardware
from benchmarks.harness.results import command_line, load_results, utc_date, write_results
from benchmarks.harness.runs import pin_settings
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.taggers import instance_batches
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies.distillation_pipeline import Pipeline, forward
from benchmarks.studies.distillation_pipeline import speed as timed_speed

CONFIGS = ROOT / "training_configs" / "distillation"
VARIANTS = ("teacher", "bilstm", "distilled", "distilled_aug")
STUDENT_VARIANTS = VARIANTS[1:]
# the students' word vectors (--student-word-vectors): trained random vectors (`<task>_<variant>`
# configs), or those plus a frozen GloVe channel (`<task>_<variant>_glove`); per student, the
# one with the better dev accuracy is kept (ties: the first listed here)
WORD_VECTORS = ("random", "glove")
# distilled + augmentation over the plain BiLSTM (test accuracy points), and below its teacher
GAIN_GOAL = {"sst2": 4.0, "pair": 3.0}
GAP_GOAL = 3.0
SPEEDUP_GOAL = {1: 10.0, 64: 20.0}  # student / teacher sentences/s at batch 1, 64
SPEED_SENTENCES = {64: 872, 1: 100}  # the speed stage's first test.tsv sentences, by batch size


def sst2_dir() -> str:
    return str(data_path("SST2_DATA_DIR", "sst2", must_exist=False))


def sick_path() -> str:
    return str(data_path("SICK_DATA_PATH", "sick/SICK.txt", must_exist=False))


def sick_split(name: str) -> str:
    return f"{sick_path()}#SemEval_set={name}"


def read_tsv(file_path: str) -> Tuple[str, List[str]]:
    """The header line and the data lines of a TSV file, each ending in "\\n", as the
    `distillation_tsv` reader reads them (`read_tsv_rows`: a `#column=value` suffix keeps the
    rows whose `column` is `value`)."""
    from ldnet_allennlp.distillation.classification.dataset_readers import distillation_readers

    rows = [row for _, _, row in distillation_readers.read_tsv_rows(file_path)]
    return "\t".join(rows[0]) + "\n", ["\t".join(row.values()) + "\n" for row in rows]


def write_tsv(target: Path, header: str, rows: Sequence[str]) -> None:
    """Written whole or not at all (a temporary file renamed), so a stopped run leaves no half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(header + "".join(rows), encoding="utf-8")
    os.replace(partial, target)


def carve_dev(
    header: str, rows: Sequence[str], column: str, dev_size: int, seed: int
) -> Tuple[List[str], List[str]]:
    """
    `(dev, pool)`: the dev holds `dev_size` distinct sentences (`column`, whitespace-stripped)
    drawn with `random.Random(seed)` from the distinct sentences of `rows`, one row each (the
    first in file order); the pool holds every row whose sentence is not in the dev (duplicates
    of a dev sentence go with it). Both keep file order: the same rows and seed, the same split.
    """
    index = header.rstrip("\n").split("\t").index(column)
    keys = [row.rstrip("\n").split("\t")[index].strip() for row in rows]
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
    return [rows[i] for i in sorted(random.Random(seed).sample(range(len(rows)), size))]


def positive(value: str) -> int:
    """argparse type of the counts: train sizes, n_iter (0 would be the distilled student's)."""
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return int(value)


def train_size(value: str) -> Optional[int]:
    """argparse type of the train sizes: a positive number of rows, or `all` (None)."""
    return None if value == "all" else positive(value)


def task_files(task: str, run_dir: Path) -> Dict[str, str]:
    """A task's split files: `train` and `dev` (what training and selection read), `test`
    (SST-2: GLUE dev.tsv; only the final evaluation step asks for it) and `record`."""
    data_dir = run_dir / "data" / task
    files = {"record": str(data_dir / "split.json")}
    if task == "sst2":
        files.update(train=str(data_dir / "train.tsv"), dev=str(data_dir / "dev.tsv"))
        return {**files, "test": os.path.join(sst2_dir(), "dev.tsv")}
    train = str(data_dir / "SICK_train_subset.txt")
    return {**files, "train": train, "dev": sick_split("TRIAL"), "test": sick_split("TEST")}


def split_once(task: str, args: argparse.Namespace, run_dir: Path) -> bool:
    """
    The split files of a task in `<run_dir>/data/<task>/`, then `split.json` (what was written;
    its presence marks the step done), the settings they depend on pinned in
    `<run_dir>/<task>_settings.json`. Reads only the training source: SST-2's train.tsv, the
    TRAIN rows of SICK.txt. Returns whether it wrote them now.
    """
    sst2 = task == "sst2"
    size = args.sst2_train_size if sst2 else args.pair_train_size
    settings = {"seed": args.seed, "train_size": size or "all"}
    if sst2:
        settings["dev_size"] = args.sst2_dev_size
    pin_settings(run_dir, settings, name=f"{task}_settings")
    files = task_files(task, run_dir)
    if Path(files["record"]).exists():
        return False
    source = os.path.join(sst2_dir(), "train.tsv") if sst2 else sick_split("TRAIN")
    header, rows = read_tsv(source)
    if sst2:
        dev, pool = carve_dev(header, rows, "sentence", args.sst2_dev_size, args.seed)
        write_tsv(Path(files["dev"]), header, dev)
        record = {"source": source, "source_rows": len(rows), "dev_rows": len(dev)}
        record["rows_dropped_as_duplicates_of_dev_sentences"] = len(rows) - len(dev) - len(pool)
    else:
        pool = rows
        record = {"source": source, "dev": files["dev"], "dev_rows": len(read_tsv(files["dev"])[1])}
    train = choose_rows(pool, size, args.seed)
    write_tsv(Path(files["train"]), header, train)
    record.update(train_pool_rows=len(pool), train_rows=len(train), seed=args.seed)
    Path(files["record"]).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return True


def split_note(task: str, args: argparse.Namespace, split: Dict[str, Any]) -> str:
    """The results file's `splits.<task>` note (what the dev and test are for: `splits.keys`)."""
    if task == "sst2":
        size = "all" if args.sst2_train_size is None else args.sst2_train_size
        return (
            f"train = {split['train_rows']} rows ({size}) of GLUE SST-2 train.tsv minus the dev; "
            f"dev = {split['dev_rows']} distinct sentences carved from train.tsv with seed "
            f"{args.seed} (<run dir>/data/sst2/dev.tsv; {split['train_pool_rows']} rows left in "
            "the training pool); test = GLUE dev.tsv"
        )
    return (
        f"train = {split['train_rows']} of the {split['train_pool_rows']} SemEval_set TRAIN "
        f"pairs of SICK.txt; dev = TRIAL ({split['dev_rows']} pairs); test = TEST"
    )


def accuracy(model_dir: Path, test: bool = False) -> float:
    """A model's accuracy (%): its best epoch's on dev, or with `test` on the held-out test."""
    file, key = (
        ("test_metrics.json", "accuracy") if test else ("metrics.json", "best_validation_accuracy")
    )
    return round(100.0 * json.loads((model_dir / file).read_text())[key], 2)


def student_name(variant: str, n_iter: Optional[int], vectors: str) -> str:
    """A student's run name (its directory: `<task>_<name>`): e.g. `bilstm`, `distilled_aug_n20`,
    `glove_distilled_aug_n20`."""
    name = variant if n_iter is None else f"{variant}_n{n_iter}"
    return name if vectors == "random" else f"{vectors}_{name}"


def student_config(task: str, variant: str, vectors: str) -> Path:
    """The config of a student: `<task>_<variant>.jsonnet`, `<task>_<variant>_glove.jsonnet`."""
    return CONFIGS / f"{task}_{variant}{'' if vectors == 'random' else '_' + vectors}.jsonnet"


def trained_students(task: str, run_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Every finished student of the run dir, also those of earlier invocations: directory name
    -> variant, word vectors, n_iter (distilled_aug) and best dev accuracy; ordered by variant,
    then word vectors (random first), then n_iter."""
    found = []
    for archive in run_dir.glob(f"{task}_*/model.tar.gz"):
        name = archive.parent.name[len(task) + 1 :]
        vectors = "glove" if name.startswith("glove_") else "random"
        variant, _, n_iter = name.removeprefix("glove_").partition("_n")
        if variant in STUDENT_VARIANTS and (variant == "distilled_aug") == bool(n_iter):
            order = (STUDENT_VARIANTS.index(variant), WORD_VECTORS.index(vectors))
            found.append((*order, int(n_iter or 0), archive.parent))
    return {
        path.name: {"variant": STUDENT_VARIANTS[v], "vectors": WORD_VECTORS[w]}
        | {"n_iter": n_iter or None, "dev": accuracy(path)}
        for v, w, n_iter, path in sorted(found)
    }


def chosen_students(candidates: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    """Per student variant, the directory name with the best dev accuracy (ties: the first, in
    the order of `trained_students`)."""
    names = {v: [n for n, c in candidates.items() if c["variant"] == v] for v in STUDENT_VARIANTS}
    return {
        v: max(found, key=lambda n: candidates[n]["dev"]) for v, found in names.items() if found
    }


def count_rows(path: Path) -> int:
    """The rows of a transfer set (its lines after the header)."""
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle) - 1


class Run:
    """One invocation's results and run dir. Tasks may write the results side by side: each
    save writes only this run's changes since its last load or save (`write_results(since=)`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.run_dir = args, Path(args.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.results = load_results("distillation")
        self.since = copy.deepcopy(self.results)

    def save(self, finish: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        written = write_results("distillation", self.results, since=self.since, finish=finish)
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


class Task:
    """One task's steps in a run: `sst2`, or `sick` (results keys `pair_*`). `pipe.env` is what
    training, labelling and selection may read (never the test)."""

    def __init__(self, name: str, run: Run) -> None:
        self.name, self.run, self.args, self.run_dir = name, run, run.args, run.run_dir
        self.prefix, self.upper = ("sst2", "SST2") if name == "sst2" else ("pair", "SICK")
        self.files = task_files(name, run.run_dir)
        self.sizes: Dict[str, Any] = {}  # results["sizes"][name]
        run.results.setdefault("sizes", {})[name] = self.sizes
        env = {"SST2_TRAIN_DATA_PATH": self.files["train"], "SST2_DEV_DATA_PATH": self.files["dev"]}
        if name != "sst2":
            env = {"SICK_DATA_PATH": sick_path()}  # the SICK configs' dev: its TRIAL rows
        self.pipe = run.pipeline(name, env)

    def transfer_set(self, n_iter: Any) -> Path:
        return self.run_dir / "transfer" / f"{self.name}_aug_n{n_iter}.jsonl"

    def steps(self) -> None:
        """The steps in order."""
        pair_n_iter = self.name != "sst2" and self.args.pair_n_iter
        n_iters = sorted(set(pair_n_iter or self.args.n_iter))
        self.split()
        self.teacher()
        self.transfer_sets(n_iters)
        self.students(n_iters)
        self.test(self.choose_on_dev())

    def split(self) -> None:
        """The task's split (written once), its sizes and notes in the results."""
        results = self.run.results
        self.pipe.step(f"{self.name}_split", lambda: split_once(self.name, self.args, self.run_dir))
        split = json.loads(Path(self.files["record"]).read_text())
        self.sizes.update({k: v for k, v in split.items() if k not in ("seed", "train_rows")})
        self.sizes["train_examples"] = split["train_rows"]
        results.setdefault("splits", {})[self.name] = split_note(self.name, self.args, split)

    def teacher(self) -> None:
        """Fine-tunes the teacher (best epoch on dev); its dev accuracy and what an epoch cost."""
        args, teacher_dir = self.args, self.run_dir / f"{self.name}_teacher"
        epochs = (args.pair_teacher_epochs if self.name != "sst2" else None) or args.teacher_epochs
        settings = {"teacher_epochs": epochs, "teacher_lr": args.teacher_lr}
        pin_settings(self.run_dir, settings, name=f"{self.name}_settings")
        overrides = {"train_data_path": self.files["train"], "trainer.num_epochs": epochs}
        overrides["trainer.optimizer.lr"] = args.teacher_lr
        config = CONFIGS / f"{self.name}_teacher.jsonnet"
        self.pipe.train(f"{self.name}_teacher_finetune", config, teacher_dir, overrides)
        self.run.results[f"{self.prefix}_dev_acc_teacher"] = accuracy(teacher_dir)
        self.sizes["teacher_epochs"] = epochs
        epochs = allennlp.epoch_metrics(teacher_dir)
        if epochs:  # what one teacher epoch costs (training + dev), to size a run
            seconds = allennlp.duration_seconds(epochs[0]["training_duration"])
            self.sizes["teacher_seconds_epoch_0"] = round(seconds, 1)

    def transfer_sets(self, n_iters: List[int]) -> None:
        """The augmented transfer set per n_iter (`allennlp ldnet-distill-transfer-set`) and the
        un-augmented one: the originals of the first, with n_iter 0 in its header."""
        teacher = self.run_dir / f"{self.name}_teacher" / "model.tar.gz"
        plain = self.run_dir / "transfer" / f"{self.name}.jsonl"
        for n_iter in n_iters:
            path = self.transfer_set(n_iter)
            command = ["ldnet-distill-transfer-set", str(teacher), self.files["train"], str(path)]
            command += ["--n-iter", str(n_iter), "--seed", str(self.args.seed), "--batch-size"]
            self.pipe.label(f"{self.name}_transfer_set_n{n_iter}", command + ["64"], path)
            if not plain.exists():
                partial = plain.with_name(plain.name + ".partial")
                with open(path, encoding="utf-8") as source, open(partial, "w") as out:
                    header = json.loads(source.readline())
                    header["transfer_set"].update(n_iter=0, derived_from=str(path))
                    out.write(json.dumps(header) + "\n")
                    out.writelines(line for line in source if not json.loads(line)["augmented"])
                os.replace(partial, plain)
        self.sizes["transfer_set_rows_plain"] = count_rows(plain)
        self.pipe.env[f"{self.upper}_TRANSFER_SET"] = str(plain)

    def students(self, n_iters: List[int]) -> None:
        """The three students per word-vector channel (distilled + augmentation per n_iter), from
        `<task>_<variant>[_glove].jsonnet`."""
        epochs = self.args.student_epochs
        pin_settings(self.run_dir, {"student_epochs": epochs}, name=f"{self.name}_settings")
        students = [("bilstm", None), ("distilled", None)] + [("distilled_aug", n) for n in n_iters]
        for vectors in self.args.student_word_vectors:
            for variant, n_iter in students:
                name = student_name(variant, n_iter, vectors)
                config = student_config(self.name, variant, vectors)
                overrides: Dict[str, Any] = {"trainer.num_epochs": epochs}
                if variant == "bilstm":
                    overrides["train_data_path"] = self.files["train"]
                env = {}
                if n_iter is not None:
                    env[f"{self.upper}_TRANSFER_SET_AUG"] = str(self.transfer_set(n_iter))
                out = self.run_dir / f"{self.name}_{name}"
                self.pipe.train(f"{self.name}_student_{name}", config, out, overrides, env)

    def choose_on_dev(self) -> Dict[str, Path]:
        """Per student, the best dev accuracy among every n_iter and word-vector channel trained
        in this run dir (ties: random vectors, then the smaller n_iter); returns the four final
        models' directories by variant."""
        results, prefix, sizes = self.run.results, self.prefix, self.sizes
        candidates = trained_students(self.name, self.run_dir)
        finals = chosen_students(candidates)
        results[f"{prefix}_dev_acc_by_student"] = {n: c["dev"] for n, c in candidates.items()}
        for variant in STUDENT_VARIANTS:
            results[f"{prefix}_dev_acc_{variant}"] = candidates[finals[variant]]["dev"]
        sizes["word_vectors"] = {v: candidates[finals[v]]["vectors"] for v in STUDENT_VARIANTS}
        by_n_iter = {
            str(found["n_iter"]): found["dev"]
            for found in candidates.values()
            if found["variant"] == "distilled_aug"
            and found["vectors"] == sizes["word_vectors"]["distilled_aug"]
        }
        results[f"{prefix}_dev_acc_distilled_aug_by_n_iter"] = by_n_iter
        sizes["n_iter"] = chosen = candidates[finals["distilled_aug"]]["n_iter"]
        sizes["transfer_set_rows_aug_by_n_iter"] = {  # also those of earlier invocations
            n: count_rows(self.transfer_set(n)) for n in by_n_iter
        }
        sizes["transfer_set_rows_aug"] = sizes["transfer_set_rows_aug_by_n_iter"][str(chosen)]
        self.run.save()
        finals["teacher"] = f"{self.name}_teacher"
        return {v: self.run_dir / finals[v] for v in VARIANTS}

    def test(self, finals: Dict[str, Path]) -> None:
        """The held-out test: once, for the four final models, after everything else."""
        results = self.run.results
        archives = {variant: model_dir / "model.tar.gz" for variant, model_dir in finals.items()}
        self.pipe.test(f"{self.name}_test_evaluation", archives, self.files["test"])
        for variant, model_dir in finals.items():
            results[f"{self.prefix}_test_acc_{variant}"] = accuracy(model_dir, test=True)
        _, test_rows = read_tsv(self.files["test"])  # counted only now, after the evaluation
        name = "GLUE SST-2 dev.tsv" if self.name == "sst2" else "SICK.txt, SemEval_set TEST"
        split = f"{name}: {self.files['test']} ({len(test_rows)} examples)"
        results[f"{self.prefix}_test_split"] = split
        self.run.save()


def speed_models(run: Run, timing_data: str) -> Dict[str, Tuple[Any, List[Any]]]:
    """
    Teacher and student, each a (model, instances) pair, with untrained weights (speed does not
    depend on them); each reads the timing sentences with its own (validation) reader. The
    student has the vocabulary of the chosen SST-2 distilled_aug student if this run dir has one
    (so that `params_student` is the real student's), else one built from the training split.
    """
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the teacher's transformer, from the cache
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    files = task_files("sst2", run.run_dir)
    if not Path(files["record"]).exists():  # else the SST-2 run's split
        split_once("sst2", run.args, run.run_dir)
    os.environ.update(SST2_TRAIN_DATA_PATH=files["train"], SST2_DEV_DATA_PATH=files["dev"])
    candidates = trained_students("sst2", run.run_dir)
    chosen = chosen_students(candidates).get("distilled_aug")
    vocabulary = None if chosen is None else run.run_dir / chosen / "vocabulary"
    vectors = "random" if chosen is None else candidates[chosen]["vectors"]
    run.results["speed_setup"] = {"student_vocabulary": str(vocabulary or files["train"])}

    def build(config: Path, vocabulary_data: str) -> Tuple[Any, List[Any]]:
        params = Params.from_file(str(config))
        readers = [key for key in ("validation_dataset_reader", "dataset_reader") if key in params]
        reader = DatasetReader.from_params(params.pop(readers[0]))
        instances = list(reader.read(timing_data))[: SPEED_SENTENCES[64]]
        if config.name != "sst2_teacher.jsonnet" and vocabulary is not None:
            vocab = Vocabulary.from_files(str(vocabulary))
        else:  # labelled sentences, for the label namespace
            vocab = Vocabulary.from_instances(reader.read(vocabulary_data))
        return Model.from_params(vocab=vocab, params=params.pop("model")).eval(), instances

    student = build(student_config("sst2", "bilstm", vectors), files["train"])
    return {"teacher": build(CONFIGS / "sst2_teacher.jsonnet", files["dev"]), "student": student}


def speed(run: Run) -> None:
    """Sentences/s of teacher vs student: the same process, sentences, warm-up and rounds for
    both, in the order teacher b64, student b64, teacher b1, student b1; at 1 and 2 threads."""
    args, results = run.args, run.results
    timing_data = os.path.join(sst2_dir(), "test.tsv")
    models = speed_models(run, timing_data)
    for name, (model, _) in models.items():
        results[f"params_{name}"] = sum(p.numel() for p in model.parameters())
    embeddings = sum(p.numel() for p in models["student"][0].text_field_embedder.parameters())
    results["params_student_without_embeddings"] = results["params_student"] - embeddings
    counts = {64: len(models["teacher"][1])}
    counts[1] = min(SPEED_SENTENCES[1], counts[64])
    cases, work = {}, {}
    for b in (64, 1):
        for name, (model, instances) in models.items():
            batches = instance_batches(model, instances[: counts[b]], b)
            cases[f"{name}_b{b}"] = forward([(model, batches)])
            work[f"{name}_b{b}"] = counts[b]
    by_threads: Dict[str, float] = {}
    for threads in (1, 2):
        rates, _ = timed_speed(cases, work, args.rounds, threads)
        by_threads.update({f"{k}_threads{threads}": round(v, 1) for k, v in rates.items()})
    used = {key: max((1, 2), key=lambda t: by_threads[f"{key}_threads{t}"]) for key in cases}
    results.update(speed_by_threads=by_threads, speed_threads_used=used)
    for key, threads in used.items():
        results[f"sentences_per_sec_{key}"] = by_threads[f"{key}_threads{threads}"]
    for b in (1, 64):
        rate = {name: results[f"sentences_per_sec_{name}_b{b}"] for name in models}
        results[f"student_speedup_b{b}"] = round(rate["student"] / rate["teacher"], 1)
    results["speed_setup"].update(
        data=f"the first {counts[64]} sentences of {timing_data} at batch 64, the first "
        f"{counts[1]} at batch 1 (unlabelled; no split a figure is measured on)",
        rounds=args.rounds,
    )
    run.save()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--run-dir", default=str(ROOT / "runs" / "distillation"))
    add("--threads", type=int, default=1, help="threads per subprocess")
    sizes = "rows of the SST-2 training pool (train.tsv minus the dev), or 'all'"
    add("--sst2-train-size", type=train_size, default=8000, help=sizes)
    add("--sst2-dev-size", type=int, default=2000, help="carved from train.tsv")
    add("--pair-train-size", type=train_size, default=None, help="SICK TRAIN pairs (all)")
    add("--teacher-epochs", type=int, default=2)
    add("--teacher-lr", type=float, default=5e-5)
    add("--n-iter", type=positive, nargs="+", default=[20], help="transfer-set sizes, on dev")
    add("--pair-teacher-epochs", type=int, default=3, help="SICK override")
    add("--pair-n-iter", type=positive, nargs="+", default=[8, 20], help="SICK override")
    add("--student-epochs", type=int, default=8)
    vectors = "students to train: random trained word vectors, and/or with a frozen GloVe 6B 50d "
    vectors += "channel (the better on dev is kept per student)"
    add("--student-word-vectors", nargs="+", choices=WORD_VECTORS, default=["random"], help=vectors)
    add("--seed", type=int, default=13)
    add("--rounds", type=int, default=MIN_ROUNDS, help="speed: timed rounds")


def split(args: argparse.Namespace) -> None:
    """Only the split files of both tasks (and their settings pinned)."""
    run_dir = Path(args.run_dir)
    pipe = Pipeline(run_dir, run_dir / "logs" / "split.log")
    for task in ("sst2", "sick"):
        pipe.step(f"{task}_split", lambda: split_once(task, args, run_dir))
        print(json.dumps({task: task_files(task, run_dir)}, indent=1))


def part(name: str):
    """The stage of one part: "sst2", "sick" or "speed" (after SST-2, whose student it times);
    its command in `commands`, the part's own entries from other run dirs replaced (the figures
    they wrote are replaced too)."""

    def run_part(args: argparse.Namespace) -> None:
        run = Run(args)
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
            run.pipeline(name).step("speed", lambda: speed(run) or True)
        else:
            Task(name, run).steps()
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
        variants = ("teacher", "bilstm", "distilled_aug")
        teacher, bilstm, student = (results.get(f"{key}_acc_{v}") for v in variants)
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
    labels = {"teacher": "teacher", "bilstm": "plain BiLSTM"}
    labels["distilled_aug"] = "distilled + augmentation"
    for prefix, task in (("sst2", "SST-2"), ("pair", "SICK")):
        for variant, label in labels.items():
            key = f"{prefix}_test_acc_{variant}"
            lines.append(headline(results, f"{task} test accuracy, {label}", key))
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
