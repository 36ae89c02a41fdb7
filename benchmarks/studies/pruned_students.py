"""
Pruned students (issue 33): LD-Net taggers pruned to the layers of the shipped `ner_pruned` /
`chunk_pruned`, trained on the gold data plus a transfer set of unlabelled news sentences that
an ensemble of un-pruned taggers labelled with its CRF marginals (Tang et al.'s soft targets, for
sequence labelling).

    python -m benchmarks pruned_students --stage text
    python -m benchmarks pruned_students --stage transfer --task ner
    python -m benchmarks pruned_students --stage train --task ner --loss kl --sentences 40000
    python -m benchmarks pruned_students --stage train --task ner --loss silver --sentences 40000
    python -m benchmarks pruned_students --stage test --task ner --run <run name>
    python -m benchmarks pruned_students --stage speed

Stages (each skips what exists; `train` resumes an interrupted run with `--recover`):
1. `text`: `scripts/prepare_transfer_text.py` -> runs/transfer/news.txt (Reuters-21578 + BBC News,
   shuffled; a prefix is a random sample).
2. `transfer`: `allennlp ldnet-tagging-transfer-set` with the task's teachers (the shipped
   un-pruned tagger and the `pretrained/teachers/` seeds) over the first `--transfer-size`
   sentences; records the teacher's words/s and seconds.
3. `train`: the student config (`training_configs/tagging/student/<task>_pruned_student.jsonnet`)
   from the shipped pruned tagger's weights, with `--loss`, `--weight`, `--sentences` (of the
   transfer set), `--epochs`, `--seed`; records dev F1 per epoch and the CPU seconds.
4. `test`: `allennlp evaluate` of a chosen student on the test file, once, after every choice.
5. `speed`: FLOPs per token and words/s of teachers, taggers and students in one interleaved run.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT, hardware
from benchmarks.harness.results import command_line, results_path, update_results_file
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from ldnet_allennlp.pretrained import resolve_archive

PYTHON = sys.executable
OUT = ROOT / "runs" / "students"
TRANSFER = ROOT / "runs" / "transfer"
NEWS = TRANSFER / "news.txt"
RESULTS = "pruned_students.json"
LMS = {
    "FORWARD_LM_ARCHIVE": "pretrained/lm_forward.tar.gz",
    "BACKWARD_LM_ARCHIVE": "pretrained/lm_backward.tar.gz",
}
# task -> the shipped pruned tagger a student starts from, its teachers, data, dev reading
TASKS: Dict[str, Dict[str, Any]] = {
    "ner": {
        "start": "pretrained/ner_ldnet_pruned.tar.gz",
        "teachers": ["pretrained:ner", "pretrained/teachers/ner_seed2.tar.gz"],
        "data": {k: v for k, v in CONLL03.items() if k != "CONLL03_TEST_DATA_PATH"},
        "test": CONLL03["CONLL03_TEST_DATA_PATH"],
        "config": "training_configs/tagging/student/ner_pruned_student.jsonnet",
    },
    "chunk": {
        "start": "pretrained/chunk_ldnet_pruned.tar.gz",
        "teachers": ["pretrained:chunk", "pretrained/teachers/chunk_seed2.tar.gz"],
        "data": {k: v for k, v in CONLL00.items() if k != "CONLL00_TEST_DATA_PATH"},
        "test": CONLL00["CONLL00_TEST_DATA_PATH"],
        "config": "training_configs/tagging/student/chunk_pruned_student.jsonnet",
    },
}


def _record(path: List[str], value: Any) -> None:
    """Sets results[path[0]]...[path[-1]] = value in the shared results file."""

    def updates(results: Dict[str, Any]) -> Dict[str, Any]:
        node = results
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        return results

    update_results_file(results_path(RESULTS), updates, replace=True)


def stage_text(args: argparse.Namespace) -> None:
    if NEWS.exists():
        return
    command = [PYTHON, "-m", "scripts.prepare_transfer_text", "--output", str(NEWS)]
    if args.lm_text:
        command += ["--data-dir", args.lm_text]
    report = json.loads(subprocess.run(command, cwd=ROOT, check=True, capture_output=True).stdout)
    _record(["news_text"], {**report, "command": " ".join(command[1:]), "file": str(NEWS)})


def transfer_file(task: str, size: int) -> Path:
    return TRANSFER / f"{task}_news{size // 1000}k.jsonl"


def stage_transfer(args: argparse.Namespace) -> None:
    task = TASKS[args.task]
    output = transfer_file(args.task, args.transfer_size)
    arguments = [
        "ldnet-tagging-transfer-set",
        *task["teachers"],
        "--input",
        str(NEWS.relative_to(ROOT)),
        "--output",
        str(output.relative_to(ROOT)),
        "--max-sentences",
        str(args.transfer_size),
        "--threads",
        "1",
    ]
    log = output.with_suffix(".log")
    began = time.time()
    allennlp.run_allennlp(arguments, log, threads=1)
    summary = json.loads(log.read_text().strip().splitlines()[-1])
    if summary["labelled_now"]:
        _record(
            [args.task, "transfer_set"],
            {
                **summary,
                "wall_seconds": time.time() - began,
                "path": "batched AllenNLP (ldnet_crf_tagger forward + crf_marginals), 1 thread",
                "teachers": task["teachers"],
                "command": command_line(),
                "allennlp_command": "allennlp " + " ".join(arguments),
                "hardware": hardware(),
            },
        )


def run_name(args: argparse.Namespace) -> str:
    return (
        f"{args.task}_{args.loss}_w{args.weight:g}_n{args.sentences}"
        f"_e{args.epochs}_lr{args.lr:g}_seed{args.seed}"
    )


def start_dir(task: str) -> Path:
    """The serialization dir (vocabulary/ + best.th) a student starts from: the shipped pruned
    tagger, for chunking with its training-file vocabulary (`pruned_students_vocab`)."""
    from benchmarks.studies.pruning_phase2 import phase1_from_archive
    from benchmarks.studies.pruned_students_vocab import restricted_start

    start = phase1_from_archive(ROOT / TASKS[task]["start"], OUT / f"start_{task}_pruned")
    if task != "chunk":
        return start
    restricted = OUT / "start_chunk_pruned_train_vocabulary"
    dropped = restricted_start(start, restricted, CONLL00["CONLL00_TRAIN_DATA_PATH"])
    if dropped:
        _record(["chunk", "start_vocabulary_dropped"], dropped)
    return restricted


def stage_train(args: argparse.Namespace) -> None:
    task = TASKS[args.task]
    name = run_name(args)
    out = OUT / name
    env = {
        **task["data"],
        **LMS,
        "STUDENT_START_DIR": str(start_dir(args.task)),
        "TRANSFER_SET_PATH": str(transfer_file(args.task, args.transfer_size)),
        "DISTILLATION_LOSS": args.loss,
        "DISTILLATION_WEIGHT": json.dumps(args.weight),
        "TRANSFER_SENTENCES": json.dumps(args.sentences),
        "STUDENT_EPOCHS": json.dumps(args.epochs),
        "STUDENT_LR": json.dumps(args.lr),
    }
    overrides = {"random_seed": args.seed, "numpy_seed": args.seed, "pytorch_seed": args.seed}
    began = time.time()
    allennlp.train(task["config"], out, OUT / f"{name}.log", overrides, env, threads=1)
    epochs = allennlp.epoch_metrics(out)
    _record(
        [args.task, "runs", name],
        {
            "loss": args.loss,
            "weight": args.weight,
            "transfer_sentences": args.sentences,
            "epochs": args.epochs,
            "lr": args.lr,
            "seed": args.seed,
            "dev_f1_by_epoch": [100 * m["validation_f1-measure-overall"] for m in epochs],
            "best_dev_f1": 100 * max(m["validation_f1-measure-overall"] for m in epochs),
            "training_seconds": allennlp.training_seconds(out),
            "wall_seconds_this_call": time.time() - began,
            "threads": 1,
            "command": command_line(),
            "config": task["config"],
            "environment": env,
            "overrides": overrides,
            "hardware": hardware(),
        },
    )


def stage_vocabulary(args: argparse.Namespace) -> None:
    """Item 5: the shipped chunkers' test F1 with a training-file vocabulary."""
    from benchmarks.harness.timing import set_threads
    from benchmarks.studies.pruned_students_vocab import evaluate_with_training_vocabulary

    set_threads(1)
    train = CONLL00["CONLL00_TRAIN_DATA_PATH"]
    for name, archive in (
        ("chunk", "chunk_ldnet.tar.gz"),
        ("chunk_pruned", "chunk_ldnet_pruned.tar.gz"),
    ):
        figures = evaluate_with_training_vocabulary(
            str(ROOT / "pretrained" / archive), TASKS["chunk"]["test"], train
        )
        _record(
            ["test_vocabulary", name],
            {**figures, "command": command_line(), "hardware": hardware(1)},
        )
        print(name, json.dumps(figures), flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    parser.add_argument("--lm-text", default=None, help="lm_text folder (default ../shared)")
    parser.add_argument("--transfer-size", type=int, default=40000)
    parser.add_argument("--loss", choices=["kl", "silver"], default="kl")
    parser.add_argument("--weight", type=float, default=1.0)
    parser.add_argument("--sentences", type=int, default=40000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.006)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--run", nargs="+", default=[], help="student run names (stages test, speed, ship)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--read-test", action="store_true", help="stage teacher: also the test F1 (once)"
    )


def span_f1(gold: List[List[str]], predicted: List[List[str]]) -> float:
    """Micro span F1 (x100) of BIOUL tag sequences, as AllenNLP's `SpanBasedF1Measure`."""
    from allennlp.data.dataset_readers.dataset_utils.span_utils import bioul_tags_to_spans

    true_positives = false_positives = false_negatives = 0
    for gold_tags, predicted_tags in zip(gold, predicted):
        gold_spans = set(bioul_tags_to_spans(gold_tags))
        predicted_spans = set(bioul_tags_to_spans(predicted_tags))
        true_positives += len(gold_spans & predicted_spans)
        false_positives += len(predicted_spans - gold_spans)
        false_negatives += len(gold_spans - predicted_spans)
    precision = true_positives / max(true_positives + false_positives, 1)
    recall = true_positives / max(true_positives + false_negatives, 1)
    return 100 * 2 * precision * recall / max(precision + recall, 1e-12)


def teacher_f1(archives: List[str], data_file: str) -> float:
    """Span F1 of the ensemble's silver tags (`silver_tags` of its averaged marginals) on a
    labelled file, read by the first archive's validation reader (chunking: the held-out tenth
    when `data_file` is train.txt)."""
    from ldnet_allennlp.tagging.soft_targets import CrfEnsembleTeacher, silver_tags

    teacher = CrfEnsembleTeacher(archives)
    instances = list(teacher.readers[0].read(data_file))
    words = [[t.text for t in i["tokens"].tokens] for i in instances]
    gold = [list(i["tags"].labels) for i in instances]
    predicted: List[List[str]] = []
    for start in range(0, len(words), 64):
        marginals = teacher.marginals(words[start : start + 64])
        predicted += silver_tags(marginals, teacher.labels, teacher.label_encoding)
    return span_f1(gold, predicted)


def stage_teacher(args: argparse.Namespace) -> None:
    """Dev F1 of the task's teachers, one by one and as the averaged ensemble (read with the
    same decoding), and, with `--read-test`, the ensemble's test F1 (once, at the end)."""
    from benchmarks.harness.timing import set_threads

    set_threads(1)
    task = TASKS[args.task]
    dev = task["data"].get("CONLL03_DEV_DATA_PATH") or CONLL00["CONLL00_TRAIN_DATA_PATH"]
    figures: Dict[str, Any] = {"command": command_line(), "hardware": hardware(1)}
    for archive in task["teachers"]:
        figures.setdefault("dev_f1_each", {})[archive] = teacher_f1([archive], dev)
    figures["dev_f1_ensemble"] = teacher_f1(task["teachers"], dev)
    if args.read_test:
        figures["test_f1_ensemble"] = teacher_f1(task["teachers"], task["test"])
    _record([args.task, "teacher"], figures)
    print(json.dumps(figures), flush=True)


def _run_archive(name: str) -> Path:
    if not name:
        raise SystemExit("stages test, speed and ship need --run <student run name>")
    archive = OUT / name / "model.tar.gz"
    if not archive.exists():
        raise SystemExit(f"--run {name}: no finished student run at {OUT / name}")
    return archive


def stage_test(args: argparse.Namespace) -> None:
    """Test F1 of the students `--run` (each once, after every choice was made on dev)."""
    for name in args.run:
        output = OUT / name / "test_metrics.json"
        metrics = allennlp.evaluate(
            _run_archive(name), TASKS[args.task]["test"], output, OUT / f"{name}.log", threads=1
        )
        _record(
            [args.task, "runs", name, "test"],
            {"test_f1": 100 * metrics["f1-measure-overall"], "command": command_line()},
        )


def speed_rows(task: str, student: Path) -> Dict[str, List[Path]]:
    """The rows of the speed table: name -> the archives whose forwards it runs."""
    pretrained = ROOT / "pretrained"
    shipped_pruned = OUT / f"start_{task}_pruned" / "model.tar.gz"  # today's, before shipping
    teachers = [Path(resolve_archive(a)) for a in TASKS[task]["teachers"]]
    return {
        "teachers": teachers,
        "unpruned": [pretrained / ("ner_ldnet.tar.gz" if task == "ner" else "chunk_ldnet.tar.gz")],
        "pruned": [shipped_pruned],
        "student": [student],
    }


def stage_speed(args: argparse.Namespace) -> None:
    """FLOPs per token and words/s (batch 32, one thread, the first 1,000 dev sentences, median
    of interleaved rounds) of the teachers, the un-pruned tagger, today's pruned one and the
    student `--run` (its first name)."""
    from benchmarks.harness.taggers import forward_seconds, tensor_batches
    from benchmarks.harness.timing import interleaved, set_threads
    from ldnet_allennlp.tagging.flops import flops_per_token

    set_threads(1)
    rows = speed_rows(args.task, _run_archive(args.run[0] if args.run else ""))
    dev = (
        TASKS[args.task]["data"].get("CONLL03_DEV_DATA_PATH") or CONLL00["CONLL00_TRAIN_DATA_PATH"]
    )
    reader_archive = rows["unpruned"][0]
    from allennlp.models.archival import load_archive

    instances = list(load_archive(str(reader_archive)).validation_dataset_reader.read(dev))
    sentences = [[t.text for t in i["tokens"].tokens] for i in instances[:1000]]
    words = sum(len(s) for s in sentences)
    loaded = {
        row: [tensor_batches(a, sentences, 32) for a in archives] for row, archives in rows.items()
    }

    def case(row):
        return lambda: sum(forward_seconds(model, batches) for model, batches in loaded[row])

    timings = interleaved(
        {row: case(row) for row in rows}, rounds=args.rounds, threads=1, self_timed=True
    )
    figures = {
        row: {
            "archives": [str(a.relative_to(ROOT)) for a in rows[row]],
            "flops_per_token": float(sum(flops_per_token(m) for m, _ in loaded[row])),
            "words_per_second": words / timings.median(row),
            "seconds_spread": list(timings.spread(row)),
        }
        for row in rows
    }
    _record(
        [args.task, "speed"],
        {
            "rows": figures,
            "words": words,
            "sentences": len(sentences),
            "batch_size": 32,
            "rounds": args.rounds,
            "orders": timings.orders,
            "command": command_line(),
            "hardware": hardware(1),
        },
    )
    print(json.dumps(figures, indent=1), flush=True)


def stage_ship(args: argparse.Namespace) -> None:
    """The student `--run` as `pretrained/<task>_ldnet_pruned.tar.gz`: ldnet-prune
    --keep-all-layers --fp16 --reference-lms, its training reader replaced by the gold reader
    (the archive is an ordinary tagger's), its test F1 measured; then the manifest."""
    import tarfile
    import tempfile

    name = args.run[0] if args.run else ""
    run = OUT / name
    fp16 = run / "model_fp16.tar.gz"
    flags = ["--fp16", "--reference-lms", "--keep-all-layers"]
    allennlp.run_allennlp(
        ["ldnet-prune", str(_run_archive(name)), "-o", str(fp16)] + flags, OUT / f"{name}.log"
    )
    shipped = run / "model_shipped.tar.gz"
    with tarfile.open(fp16) as source, tempfile.TemporaryDirectory() as staging:
        source.extractall(staging, filter="data")
        config_file = Path(staging) / "config.json"
        config = json.loads(config_file.read_text())
        config["dataset_reader"] = config["dataset_reader"]["gold_reader"]
        config_file.write_text(json.dumps(config, indent=2))
        with tarfile.open(shipped, "w:gz") as target:
            for member in sorted(Path(staging).rglob("*")):
                if member.is_file():
                    target.add(member, arcname=str(member.relative_to(staging)))
    output = run / "test_metrics_shipped.json"
    metrics = allennlp.evaluate(
        shipped, TASKS[args.task]["test"], output, OUT / f"{name}.log", threads=1
    )
    target = ROOT / TASKS[args.task]["start"]
    import shutil

    shutil.copyfile(shipped, target)
    _record(
        [args.task, "shipped"],
        {
            "run": name,
            "file": str(target.relative_to(ROOT)),
            "test_f1_fp16": 100 * metrics["f1-measure-overall"],
            "commands": [
                command_line(),
                f"allennlp ldnet-prune {_run_archive(name).relative_to(ROOT)} -o "
                f"{fp16.relative_to(ROOT)} " + " ".join(flags),
                "python scripts/pretrained_manifest.py",
            ],
        },
    )
    subprocess.run([PYTHON, "scripts/pretrained_manifest.py"], cwd=ROOT, check=True)


KEYS = {"ner": "conll03", "chunk": "conll00"}


def _dev_f1(archive: Path, task: str, name: str) -> float:
    dev = TASKS[task]["data"].get("CONLL03_DEV_DATA_PATH") or CONLL00["CONLL00_TRAIN_DATA_PATH"]
    output = OUT / f"dev_metrics_{name}.json"
    metrics = allennlp.evaluate(archive, dev, output, OUT / f"{name}_dev.log", threads=1)
    return 100 * metrics["f1-measure-overall"]


def _seconds(text: str) -> float:
    return allennlp.duration_seconds(text)


def stage_summary(args: argparse.Namespace) -> None:
    """The task's table (teachers, un-pruned, today's pruned, student: test F1, dev F1, FLOPs per
    token, words/s) and its headline keys, for the student setting whose seeds are `--run`
    (before `ship` replaces today's pruned tagger), and the CPU-hours of every stage."""
    results = json.loads(results_path(RESULTS).read_text())
    task, key = results[args.task], KEYS[args.task]
    manifest = json.loads((ROOT / "pretrained" / "MANIFEST.json").read_text())
    unpruned_name, pruned_name = args.task, f"{args.task}_pruned"
    speed = task["speed"]["rows"]
    runs = [task["runs"][name] for name in args.run]
    if any("test" not in run for run in runs):
        raise SystemExit("run stage test on every --run first")
    student_test = [run["test"]["test_f1"] for run in runs]
    today = OUT / f"start_{args.task}_pruned" / "model.tar.gz"
    table = {
        "teachers": {
            "test_f1": task["teacher"]["test_f1_ensemble"],
            "dev_f1": task["teacher"]["dev_f1_ensemble"],
        },
        "unpruned": {
            "test_f1": manifest[unpruned_name]["test_f1"],
            "dev_f1": manifest[unpruned_name]["dev_f1"],
        },
        "pruned": {
            "test_f1": task.get("today_pruned_test_f1", manifest[pruned_name]["test_f1"]),
            "dev_f1": _dev_f1(today, args.task, f"{args.task}_pruned_today"),
        },
        "student": {
            "test_f1": sum(student_test) / len(student_test),
            "test_f1_seeds": student_test,
            "dev_f1": sum(run["best_dev_f1"] for run in runs) / len(runs),
            "runs": args.run,
        },
    }
    for row, figures in table.items():
        figures["flops_per_token"] = speed[row]["flops_per_token"]
        figures["words_per_second"] = speed[row]["words_per_second"]
    cpu = {
        "teacher_training_hours": sum(
            _seconds(record["training_wallclock"]) / 3600
            for name, record in json.loads(
                (ROOT / "pretrained" / "teachers" / "teachers.json").read_text()
            ).items()
            if name.startswith(args.task)
        ),
        "transfer_set_hours": task["transfer_set"]["seconds"] / 3600,
        "student_runs_hours": {
            name: run["training_seconds"] / 3600 for name, run in task["runs"].items()
        },
    }
    _record([args.task, "table"], table)
    _record([args.task, "today_pruned_test_f1"], table["pruned"]["test_f1"])
    _record([args.task, "cpu_hours"], cpu)
    _record([f"{key}_test_f1_student"], table["student"]["test_f1"])
    _record([f"{key}_test_f1_teacher"], table["teachers"]["test_f1"])
    _record(
        [f"{key}_flops_ratio_student_vs_pruned"],
        speed["student"]["flops_per_token"] / speed["pruned"]["flops_per_token"],
    )
    print(json.dumps(table, indent=1))


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: the student against its goal, the teacher, and the four rows of the table."""
    lines = []
    goals = {"ner": 91.0, "chunk": 95.0}
    for task in ("ner", "chunk"):
        key = KEYS[task]
        if f"{key}_test_f1_student" not in results:
            continue
        name = "CoNLL-03" if task == "ner" else "CoNLL-00"
        lines.append(
            headline(
                results,
                f"{name} test F1, pruned student (mean of seeds)",
                f"{key}_test_f1_student",
                *at_least(goals[task]),
            )
        )
        lines.append(
            headline(
                results,
                f"{name} student FLOPs per token / today's pruned tagger's",
                f"{key}_flops_ratio_student_vs_pruned",
                *at_most(1.0),
            )
        )
        if f"{key}_test_f1_teacher" in results:
            lines.append(
                headline(results, f"{name} test F1, teachers' ensemble", f"{key}_test_f1_teacher")
            )
        for row in ("teachers", "unpruned", "pruned", "student"):
            lines.append(headline(results, f"{name}: {row}", f"{task}.table.{row}"))
    return lines


STUDY = Study(
    name="pruned_students",
    description="issue 33: pruned LD-Net students distilled from an ensemble's CRF marginals",
    results_file=RESULTS,
    stages=[
        Stage("text", stage_text, "the news sentences of the transfer sets"),
        Stage("transfer", stage_transfer, "teacher marginals over the first N sentences"),
        Stage("train", stage_train, "one student run"),
        Stage("teacher", stage_teacher, "dev F1 of the teachers and of their ensemble"),
        Stage("test", stage_test, "test F1 of the chosen students, once"),
        Stage("speed", stage_speed, "FLOPs/token and words/s, one interleaved run"),
        Stage("summary", stage_summary, "the table and headline keys of the chosen setting"),
        Stage("ship", stage_ship, "the chosen student as the shipped pruned tagger"),
        Stage("vocabulary", stage_vocabulary, "item 5: shipped chunkers with a train vocabulary"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
