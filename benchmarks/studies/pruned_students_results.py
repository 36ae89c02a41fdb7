"""
The `pruned_students` study's figures (see `pruned_students.py`): the teachers' F1, the speed
run, the table and headline keys of the chosen setting, and shipping the chosen student.
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, ROOT, hardware
from benchmarks.harness.results import command_line, results_path
from benchmarks.harness.study import Headline, at_least, at_most, headline
from ldnet_allennlp.pretrained import resolve_archive
from benchmarks.studies.pruned_students_runs import (
    KEYS,
    OUT,
    RESULTS,
    TASKS,
    record,
    run_archive,
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
    from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher, silver_tags

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
    record([args.task, "teacher"], figures)
    print(json.dumps(figures), flush=True)


def speed_rows(task: str, student: Path) -> Dict[str, List[Path]]:
    """The rows of the speed table: name -> the archives whose forwards it runs."""
    pretrained = ROOT / "pretrained"
    shipped_pruned = OUT / f"start_{task}_pruned" / "model.tar.gz"  # today's, before shipping
    teachers = [ROOT / resolve_archive(a) for a in TASKS[task]["teachers"]]
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
    rows = speed_rows(args.task, run_archive(args.run[0] if args.run else ""))
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
    record(
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
    chosen = task["runs"][args.run[0]]
    same = ("loss", "lr", "epochs", "weight", "seed")
    record(
        [args.task, "dev_f1_by_transfer_sentences"],
        {
            str(run["transfer_sentences"]): run["best_dev_f1"]
            for run in task["runs"].values()
            if all(run[k] == chosen[k] for k in same)
        },
    )
    record(
        [args.task, "dev_f1_by_loss"],
        {
            f"{run['loss']} lr{run['lr']:g} {run['transfer_sentences'] // 1000}k "
            f"{run['epochs']}ep": run["best_dev_f1"]
            for run in task["runs"].values()
            if run["seed"] == 1 and run["transfer_sentences"] > 0
        },
    )
    record([args.task, "student_runs"], args.run)
    record([args.task, "table"], table)
    record([args.task, "today_pruned_test_f1"], table["pruned"]["test_f1"])
    record([args.task, "cpu_hours"], cpu)
    record([f"{key}_test_f1_student"], table["student"]["test_f1"])
    record([f"{key}_test_f1_teacher"], table["teachers"]["test_f1"])
    record(
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
        if "dev_f1_by_loss" in results[task]:
            lines.append(
                headline(
                    results, f"{name} dev F1 of each student setting", f"{task}.dev_f1_by_loss"
                )
            )
            lines.append(
                headline(
                    results,
                    f"{name} dev F1 against transfer-set sentences (the chosen setting)",
                    f"{task}.dev_f1_by_transfer_sentences",
                )
            )
    return lines
