"""
Pruned students: LD-Net taggers pruned to the layers of the shipped `ner_pruned` / `chunk_pruned`,
trained on the gold data plus a transfer set of unlabelled news sentences that an ensemble of
un-pruned taggers labelled with its CRF marginals (Tang et al.'s soft targets, for sequence
labelling), through the shared pipeline (`distillation_pipeline.py`).

    python -m benchmarks pruned_students --stage text
    python -m benchmarks pruned_students --stage transfer --task ner
    python -m benchmarks pruned_students --stage train --task ner --loss kl --sentences 40000
    python -m benchmarks pruned_students --stage test --task ner --run <run name>

Stages (each skips what exists; `train` resumes an interrupted run with `--recover`), the runs in
`pruned_students_runs.py`: `text` (`scripts/prepare_transfer_text.py`: Reuters-21578 + BBC News,
shuffled, so a prefix is a random sample); `transfer` (`allennlp ldnet-tagging-transfer-set`
with the task's teachers over the first `--transfer-size` sentences); `train` (the student config
from the shipped pruned tagger's weights); `test` (a chosen student's test F1, once, after every
choice). The figures, here: `teacher` (dev F1 of the teachers), `speed` and `summary` (the table
and headline keys).
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, load_results
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.timing import set_threads
from benchmarks.studies import pruned_students_runs as runs
from benchmarks.studies.distillation_pipeline import forward, speed
from benchmarks.studies.pruned_students_runs import OUT, TASKS, record, run_archive

KEYS = {"ner": "conll03", "chunk": "conll00"}
ROWS = ("teachers", "unpruned", "pruned", "student")  # of the table, as the speed run names them


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--task", choices=sorted(TASKS), default="ner")
    add("--lm-text", default=None, help="lm_text folder (default ../shared)")
    add("--transfer-size", type=int, default=40000)
    add("--loss", choices=["kl", "silver"], default="kl")
    add("--weight", type=float, default=1.0)
    add("--sentences", type=int, default=40000)
    add("--epochs", type=int, default=2)
    add("--lr", type=float, default=0.006)
    add("--seed", type=int, default=1)
    add("--run", nargs="+", default=[], help="student run names (stages test, speed, summary)")
    add("--rounds", type=int, default=5)
    add("--read-test", action="store_true", help="stage teacher: also the test F1 (once)")


def teacher_f1(archives: List[str], data_file: str) -> float:
    """Span F1 (x100, as AllenNLP's `SpanBasedF1Measure`) of the ensemble's silver tags
    (`silver_tags` of its averaged marginals) on a labelled file, read by the first archive's
    validation reader."""
    from allennlp.data.dataset_readers.dataset_utils.span_utils import bioul_tags_to_spans

    from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher, silver_tags

    teacher = CrfEnsembleTeacher(archives)
    instances = list(teacher.readers[0].read(data_file))
    words = [[t.text for t in i["tokens"].tokens] for i in instances]
    predicted: List[List[str]] = []
    for start in range(0, len(words), 64):
        marginals = teacher.marginals(words[start : start + 64])
        predicted += silver_tags(marginals, teacher.labels, teacher.label_encoding)
    gold = [set(bioul_tags_to_spans(list(i["tags"].labels))) for i in instances]
    found = [set(bioul_tags_to_spans(tags)) for tags in predicted]
    both = sum(len(g & f) for g, f in zip(gold, found))
    precision, recall = both / max(sum(map(len, found)), 1), both / max(sum(map(len, gold)), 1)
    return 100 * 2 * precision * recall / max(precision + recall, 1e-12)


def stage_teacher(args: argparse.Namespace) -> None:
    """Dev F1 of the task's teachers, one by one and as the averaged ensemble (read with the
    same decoding), and, with `--read-test`, the ensemble's test F1 (once, at the end)."""
    set_threads(1)
    task = TASKS[args.task]
    figures: Dict[str, Any] = {"command": command_line(), "hardware": hardware(1)}
    figures["dev_f1_each"] = {a: teacher_f1([a], task["dev"]) for a in task["teachers"]}
    figures["dev_f1_ensemble"] = teacher_f1(task["teachers"], task["dev"])
    if args.read_test:
        figures["test_f1_ensemble"] = teacher_f1(task["teachers"], task["test"])
    record(([args.task, "teacher"], figures))
    print(json.dumps(figures), flush=True)


def speed_rows(task: str, student: Path) -> Dict[str, List[Path]]:
    """The rows of the speed table: name -> the archives whose forwards it runs."""
    from ldnet_allennlp.pretrained import resolve_archive

    return {
        "teachers": [ROOT / resolve_archive(a) for a in TASKS[task]["teachers"]],
        "unpruned": [ROOT / "pretrained" / f"{task}_ldnet.tar.gz"],
        "pruned": [OUT / f"start_{task}_pruned" / "model.tar.gz"],  # the shipped one's copy
        "student": [student],
    }


def stage_speed(args: argparse.Namespace) -> None:
    """FLOPs per token and words/s (batch 32, one thread, the first 1,000 dev sentences, median
    of interleaved rounds) of the teachers, the un-pruned tagger, the shipped pruned one and the
    student `--run` (its first name)."""
    from allennlp.models.archival import load_archive

    from benchmarks.harness.taggers import tensor_batches
    from ldnet_allennlp.tagging.flops import flops_per_token

    rows = speed_rows(args.task, run_archive(args.run[0] if args.run else ""))
    reader = load_archive(str(rows["unpruned"][0])).validation_dataset_reader
    instances = list(reader.read(TASKS[args.task]["dev"]))[:1000]
    sentences = [[t.text for t in i["tokens"].tokens] for i in instances]
    words = sum(len(s) for s in sentences)
    loaded = {row: [tensor_batches(a, sentences, 32) for a in rows[row]] for row in rows}
    cases = {row: forward(loaded[row]) for row in rows}
    rates, timings = speed(cases, {row: words for row in rows}, args.rounds, threads=1)
    figures = {
        row: {
            "archives": [str(a.relative_to(ROOT)) for a in rows[row]],
            "flops_per_token": float(sum(flops_per_token(m) for m, _ in loaded[row])),
            "words_per_second": rates[row],
            "seconds_spread": list(timings.spread(row)),
        }
        for row in rows
    }
    run = {"rows": figures, "words": words, "sentences": len(sentences), "batch_size": 32}
    run.update(rounds=args.rounds, orders=timings.orders, command=command_line())
    record(([args.task, "speed"], {**run, "hardware": hardware(1)}))
    print(json.dumps(figures, indent=1), flush=True)


def summary_table(args: argparse.Namespace, task: Dict[str, Any]) -> Dict[str, Any]:
    """Test F1, dev F1, FLOPs per token and words/s of the four rows, the student's the mean of
    the runs `--run` (its seeds)."""
    manifest = json.loads((ROOT / "pretrained" / "MANIFEST.json").read_text())
    student_runs = [task["runs"][name] for name in args.run]
    if any("test" not in run for run in student_runs):
        raise SystemExit("run stage test on every --run first")
    student_test = [run["test"]["test_f1"] for run in student_runs]
    pruned = OUT / f"start_{args.task}_pruned" / "model.tar.gz"
    output = OUT / f"dev_metrics_{args.task}_pruned_today.json"
    log = OUT / f"{args.task}_pruned_today_dev.log"
    metrics = allennlp.evaluate(pruned, TASKS[args.task]["dev"], output, log, threads=1)
    table = {
        "teachers": {f: task["teacher"][f"{f}_ensemble"] for f in ("test_f1", "dev_f1")},
        "unpruned": {f: manifest[args.task][f] for f in ("test_f1", "dev_f1")},
        "pruned": {
            "test_f1": task.get("today_pruned_test_f1", manifest[f"{args.task}_pruned"]["test_f1"]),
            "dev_f1": 100 * metrics["f1-measure-overall"],
        },
        "student": {
            "test_f1": sum(student_test) / len(student_test),
            "test_f1_seeds": student_test,
            "dev_f1": sum(run["best_dev_f1"] for run in student_runs) / len(student_runs),
        },
    }
    for row, figures in table.items():
        for key in ("flops_per_token", "words_per_second"):
            figures[key] = task["speed"]["rows"][row][key]
    return table


def stage_summary(args: argparse.Namespace) -> None:
    """The task's table and headline keys for the student setting whose seeds are `--run`, its
    dev F1 by setting, and the CPU-hours of every stage."""
    task, key = load_results(runs.RESULTS)[args.task], KEYS[args.task]
    table = summary_table(args, task)
    teachers = json.loads((ROOT / "pretrained" / "teachers" / "teachers.json").read_text())
    cpu = {
        "teacher_training_hours": sum(
            allennlp.duration_seconds(teacher["training_wallclock"]) / 3600
            for name, teacher in teachers.items()
            if name.startswith(args.task)
        ),
        "transfer_set_hours": task["transfer_set"]["seconds"] / 3600,
        "student_runs_hours": {
            n: run["training_seconds"] / 3600 for n, run in task["runs"].items()
        },
    }
    chosen, same = task["runs"][args.run[0]], ("loss", "lr", "epochs", "weight", "seed")
    by_sentences = {
        str(run["transfer_sentences"]): run["best_dev_f1"]
        for run in task["runs"].values()
        if all(run[k] == chosen[k] for k in same)
    }
    by_loss = {
        f"{run['loss']} lr{run['lr']:g} {run['transfer_sentences'] // 1000}k "
        f"{run['epochs']}ep": run["best_dev_f1"]
        for run in task["runs"].values()
        if run["seed"] == 1 and run["transfer_sentences"] > 0
    }
    flops = {row: task["speed"]["rows"][row]["flops_per_token"] for row in ("student", "pruned")}
    record(
        ([args.task, "dev_f1_by_transfer_sentences"], by_sentences),
        ([args.task, "dev_f1_by_loss"], by_loss),
        ([args.task, "student_runs"], args.run),
        ([args.task, "table"], table),
        ([args.task, "today_pruned_test_f1"], table["pruned"]["test_f1"]),
        ([args.task, "cpu_hours"], cpu),
        ([f"{key}_test_f1_student"], table["student"]["test_f1"]),
        ([f"{key}_test_f1_teacher"], table["teachers"]["test_f1"]),
        ([f"{key}_flops_ratio_student_vs_pruned"], flops["student"] / flops["pruned"]),
    )
    print(json.dumps(table, indent=1))


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: the student against its goal, the teacher, and the four rows of the table."""
    lines = []
    for task, name, goal in (("ner", "CoNLL-03", 91.0), ("chunk", "CoNLL-00", 95.0)):
        key = KEYS[task]
        if f"{key}_test_f1_student" not in results:
            continue
        figure = f"{name} test F1, pruned student (mean of seeds)"
        lines.append(headline(results, figure, f"{key}_test_f1_student", *at_least(goal)))
        figure = f"{name} student FLOPs per token / the shipped pruned tagger's"
        lines.append(
            headline(results, figure, f"{key}_flops_ratio_student_vs_pruned", *at_most(1.0))
        )
        if f"{key}_test_f1_teacher" in results:
            figure = f"{name} test F1, teachers' ensemble"
            lines.append(headline(results, figure, f"{key}_test_f1_teacher"))
        lines += [headline(results, f"{name}: {row}", f"{task}.table.{row}") for row in ROWS]
        if "dev_f1_by_loss" in results[task]:
            figure = f"{name} dev F1 of each student setting"
            lines.append(headline(results, figure, f"{task}.dev_f1_by_loss"))
            figure = f"{name} dev F1 against transfer-set sentences (the chosen setting)"
            lines.append(headline(results, figure, f"{task}.dev_f1_by_transfer_sentences"))
    return lines


STUDY = Study(
    name="pruned_students",
    description="Pruned LD-Net students distilled from an ensemble's CRF marginals.",
    results_file=runs.RESULTS,
    stages=[
        Stage("text", runs.stage_text, "the news sentences of the transfer sets"),
        Stage("transfer", runs.stage_transfer, "teacher marginals over the first N sentences"),
        Stage("train", runs.stage_train, "one student run"),
        Stage("teacher", stage_teacher, "dev F1 of the teachers and of their ensemble"),
        Stage("test", runs.stage_test, "test F1 of the chosen students, once"),
        Stage("speed", stage_speed, "FLOPs/token and words/s, one interleaved run"),
        Stage("summary", stage_summary, "the table and headline keys of the chosen setting"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
