"""
The `pruned_students` study's runs (see `pruned_students.py`): its tasks and paths, the news
text, the transfer sets, the student runs and their test F1, and item 5's vocabulary check.
"""

import argparse
import shutil
import tarfile
import tempfile
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT, hardware
from benchmarks.harness.results import (
    command_line,
    record_run,
    results_path,
    update_results_file,
)

PYTHON = sys.executable
OUT = ROOT / "runs" / "students"
TRANSFER = ROOT / "runs" / "transfer"
NEWS = TRANSFER / "news.txt"
RESULTS = "pruned_students.json"
LMS = {
    "FORWARD_LM_ARCHIVE": "pretrained/lm_forward.tar.gz",
    "BACKWARD_LM_ARCHIVE": "pretrained/lm_backward.tar.gz",
}
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
KEYS = {"ner": "conll03", "chunk": "conll00"}


def record(path: List[str], value: Any) -> None:
    """Sets results[path[0]]...[path[-1]] = value in the shared results file, appends the
    running command (its date and hardware, and the key it wrote) to `commands`, and sets
    `hardware` to the machine of this latest run."""

    def updates(results: Dict[str, Any]) -> Dict[str, Any]:
        node = results
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        results["hardware"] = record_run(results, wrote=".".join(path))["hardware"]
        return results

    update_results_file(results_path(RESULTS), updates, replace=True)


def stage_text(args: argparse.Namespace) -> None:
    if NEWS.exists():
        return
    command = [PYTHON, "-m", "scripts.prepare_transfer_text", "--output", str(NEWS)]
    if args.lm_text:
        command += ["--data-dir", args.lm_text]
    report = json.loads(subprocess.run(command, cwd=ROOT, check=True, capture_output=True).stdout)
    record(["news_text"], {**report, "command": " ".join(command[1:]), "file": str(NEWS)})


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
        record(
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
        record(["chunk", "start_vocabulary_dropped"], dropped)
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
    record(
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


def run_archive(name: str) -> Path:
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
            run_archive(name), TASKS[args.task]["test"], output, OUT / f"{name}.log", threads=1
        )
        record(
            [args.task, "runs", name, "test"],
            {"test_f1": 100 * metrics["f1-measure-overall"], "command": command_line()},
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
        record(
            ["test_vocabulary", name],
            {**figures, "command": command_line(), "hardware": hardware(1)},
        )
        print(name, json.dumps(figures), flush=True)


def stage_ship(args: argparse.Namespace) -> None:
    """The student `--run` as `pretrained/<task>_ldnet_pruned.tar.gz`: ldnet-prune
    --keep-all-layers --fp16 --reference-lms, its training reader replaced by the gold reader
    (the archive is an ordinary tagger's), its test F1 measured; then the manifest."""

    name = args.run[0] if args.run else ""
    run = OUT / name
    fp16 = run / "model_fp16.tar.gz"
    flags = ["--fp16", "--reference-lms", "--keep-all-layers"]
    allennlp.run_allennlp(
        ["ldnet-prune", str(run_archive(name)), "-o", str(fp16)] + flags, OUT / f"{name}.log"
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

    shutil.copyfile(shipped, target)
    record(
        [args.task, "shipped"],
        {
            "run": name,
            "file": str(target.relative_to(ROOT)),
            "test_f1_fp16": 100 * metrics["f1-measure-overall"],
            "commands": [
                command_line(),
                f"allennlp ldnet-prune {run_archive(name).relative_to(ROOT)} -o "
                f"{fp16.relative_to(ROOT)} " + " ".join(flags),
                "python scripts/pretrained_manifest.py",
            ],
        },
    )
    subprocess.run([PYTHON, "scripts/pretrained_manifest.py"], cwd=ROOT, check=True)
