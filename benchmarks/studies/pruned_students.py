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
from benchmarks.harness.study import Stage, Study

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


STUDY = Study(
    name="pruned_students",
    description="issue 33: pruned LD-Net students distilled from an ensemble's CRF marginals",
    results_file=RESULTS,
    stages=[
        Stage("text", stage_text, "the news sentences of the transfer sets"),
        Stage("transfer", stage_transfer, "teacher marginals over the first N sentences"),
        Stage("train", stage_train, "one student run"),
        Stage("teacher", stage_teacher, "dev F1 of the teachers and of their ensemble"),
        Stage("vocabulary", stage_vocabulary, "item 5: shipped chunkers with a train vocabulary"),
    ],
    add_arguments=add_arguments,
)
