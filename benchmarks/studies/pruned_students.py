"""
Pruned students: LD-Net taggers pruned to the layers of the shipped `ner_pruned` / `chunk_pruned`,
trained on the gold data plus a transfer set of unlabelled news sentences that an ensemble of
un-pruned taggers labelled with its CRF marginals (Tang et al.'s soft targets, for sequence
labelling), through the shared pipeline (`distillation_pipeline.py`).

    python -m benchmarks pruned_students --stage text
    python -m benchmarks pruned_students --stage transfer --task ner
    python -m benchmarks pruned_students --stage train --task ner --loss kl --sentences 40000
    python -m benchmarks pruned_students --stage test --task ner --run <run name>

Stages (each skips what exists; `train` resumes an interrupted run with `--recover`): `text`
(`scripts/prepare_transfer_text.py`: Reuters-21578 + BBC News, shuffled, so a prefix is a random
sample); `transfer` (`allennlp ldnet-tagging-transfer-set` with the task's teachers over the
first `--transfer-size` sentences); `train` (the student config from the shipped pruned tagger's
weights, for chunking `restricted_start`); `test` (a chosen student's test F1, once, after every
choice); then the figures: `teacher` (dev F1 of the teachers), `speed` and `summary` (the table
and headline keys).
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT, hardware
from benchmarks.harness.results import command_line, load_results, run_record, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_least, at_most, headline
from benchmarks.harness.taggers import span_f1
from benchmarks.harness.timing import set_threads
from benchmarks.studies.distillation_pipeline import Pipeline, forward, speed

OUT = ROOT / "runs" / "students"
TRANSFER = ROOT / "runs" / "transfer"
NEWS = TRANSFER / "news.txt"
RESULTS = "pruned_students.json"
LMS = {
    "FORWARD_LM_ARCHIVE": "pretrained/lm_forward.tar.gz",
    "BACKWARD_LM_ARCHIVE": "pretrained/lm_backward.tar.gz",
}
TASKS: Dict[str, Dict[str, Any]] = {
    task: {
        "start": f"pretrained/{task}_ldnet_pruned.tar.gz",
        "teachers": [f"pretrained:{task}", f"pretrained/teachers/{task}_seed2.tar.gz"],
        "data": {k: v for k, v in paths.items() if not k.endswith("_TEST_DATA_PATH")},
        "test": paths[f"{prefix}_TEST_DATA_PATH"],
        # chunking's dev: the held-out tenth of train.txt, as the validation reader reads it
        "dev": paths.get("CONLL03_DEV_DATA_PATH") or paths["CONLL00_TRAIN_DATA_PATH"],
        "config": f"training_configs/tagging/student/{task}_pruned_student.jsonnet",
        "key": prefix.lower(),  # the prefix of the task's headline keys
    }
    for task, prefix, paths in (("ner", "CONLL03", CONLL03), ("chunk", "CONLL00", CONLL00))
}
CHUNK_TRAIN = CONLL00["CONLL00_TRAIN_DATA_PATH"]
# the embedding weight of each vocabulary namespace a training-file vocabulary restricts
EMBEDDINGS = {
    "tokens": "text_field_embedder.token_embedder_tokens.weight",
    "token_characters": (
        "text_field_embedder.token_embedder_token_characters._embedding._module.weight"
    ),
}
ROWS = ("teachers", "unpruned", "pruned", "student")  # of the table, as the speed run names them


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--task", choices=sorted(TASKS), default="ner")
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


def record(*items: Tuple[List[str], Any]) -> None:
    """For each `(path, value)`, sets results[path[0]]...[path[-1]] = value in the shared
    results file and appends the running command (its date and hardware, and the key it wrote)
    to `commands`; `hardware` and `date` become those of this latest run."""

    def updates(results: Dict[str, Any]) -> Dict[str, Any]:
        for path, value in items:
            node = results
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
            entry = run_record(wrote=".".join(path))
            results.setdefault("commands", []).append(entry)
            results.update(hardware=entry["hardware"], date=entry["date"])
        return results

    write_results(RESULTS, updates, replace=True)


def stage_text(args: argparse.Namespace) -> None:
    if NEWS.exists():
        return
    command = [sys.executable, "-m", "scripts.prepare_transfer_text", "--output", str(NEWS)]
    report = json.loads(subprocess.run(command, cwd=ROOT, check=True, capture_output=True).stdout)
    record((["news_text"], {**report, "command": " ".join(command[1:]), "file": str(NEWS)}))


def transfer_file(task: str, size: int) -> Path:
    return TRANSFER / f"{task}_news{size // 1000}k.jsonl"


def stage_transfer(args: argparse.Namespace) -> None:
    """The task's teachers' marginals over the first `--transfer-size` news sentences."""
    teachers, output = TASKS[args.task]["teachers"], transfer_file(args.task, args.transfer_size)
    arguments = ["ldnet-tagging-transfer-set", *teachers, "--input", str(NEWS.relative_to(ROOT))]
    arguments += ["--output", str(output.relative_to(ROOT))]
    arguments += ["--max-sentences", str(args.transfer_size), "--threads", "1"]
    pipe = Pipeline(TRANSFER, output.with_suffix(".log"))
    if not pipe.label(output.stem, arguments, output):
        return
    figures = json.loads(pipe.log.read_text().strip().splitlines()[-1])  # the command's summary
    figures.update(wall_seconds=pipe.seconds[output.stem], teachers=teachers)
    figures.update(command=command_line(), allennlp_command="allennlp " + " ".join(arguments))
    record(([args.task, "transfer_set"], {**figures, "hardware": hardware()}))


def run_name(args: argparse.Namespace) -> str:
    return (
        f"{args.task}_{args.loss}_w{args.weight:g}_n{args.sentences}"
        f"_e{args.epochs}_lr{args.lr:g}_seed{args.seed}"
    )


def start_dir(task: str) -> Path:
    """The serialization dir (vocabulary/ + best.th) a student starts from: the shipped pruned
    tagger, for chunking with a training-file vocabulary (`restricted_start`)."""
    from benchmarks.studies.pruning_phase2 import phase1_from_archive

    start = phase1_from_archive(ROOT / TASKS[task]["start"], OUT / f"start_{task}_pruned")
    if task != "chunk":
        return start
    restricted = OUT / "start_chunk_pruned_train_vocabulary"
    dropped = restricted_start(start, restricted)
    if dropped:
        record((["chunk", "start_vocabulary_dropped"], dropped))
    return restricted


def stage_train(args: argparse.Namespace) -> None:
    """One student run: `--loss`, `--weight`, `--sentences` of the transfer set, `--epochs`,
    `--lr`, `--seed`; its dev F1 per epoch and its CPU seconds."""
    task, name = TASKS[args.task], run_name(args)
    env = {**task["data"], **LMS, "STUDENT_START_DIR": str(start_dir(args.task))}
    env["TRANSFER_SET_PATH"] = str(transfer_file(args.task, args.transfer_size))
    env.update(DISTILLATION_LOSS=args.loss, DISTILLATION_WEIGHT=json.dumps(args.weight))
    env.update(STUDENT_LR=json.dumps(args.lr), TRANSFER_SENTENCES=str(args.sentences))
    env["STUDENT_EPOCHS"] = str(args.epochs)
    overrides = {"random_seed": args.seed, "numpy_seed": args.seed, "pytorch_seed": args.seed}
    pipe = Pipeline(OUT, OUT / f"{name}.log", env=env)
    pipe.train(name, task["config"], OUT / name, overrides)
    f1 = [100 * m["validation_f1-measure-overall"] for m in allennlp.epoch_metrics(OUT / name)]
    figures = {key: getattr(args, key) for key in ("loss", "weight", "epochs", "lr", "seed")}
    figures.update(transfer_sentences=args.sentences, dev_f1_by_epoch=f1, best_dev_f1=max(f1))
    figures.update(training_seconds=allennlp.training_seconds(OUT / name))
    figures.update(wall_seconds_this_call=pipe.seconds.get(name), threads=1, command=command_line())
    figures.update(config=task["config"], environment=env, overrides=overrides)
    record(([args.task, "runs", name], {**figures, "hardware": hardware()}))


def run_archive(name: str) -> Path:
    if not name:
        raise SystemExit("stages test and speed need --run <student run name>")
    archive = OUT / name / "model.tar.gz"
    if not archive.exists():
        raise SystemExit(f"--run {name}: no finished student run at {OUT / name}")
    return archive


def stage_test(args: argparse.Namespace) -> None:
    """Test F1 of the students `--run` (each once, after every choice was made on dev)."""
    for name in args.run:
        pipe = Pipeline(OUT, OUT / f"{name}.log")
        metrics = pipe.test(f"{name}_test", {name: run_archive(name)}, TASKS[args.task]["test"])
        figures = {"test_f1": 100 * metrics[name]["f1-measure-overall"], "command": command_line()}
        record(([args.task, "runs", name, "test"], figures))


def restricted_start(start: Path, out: Path) -> Dict[str, int]:
    """`start` (vocabulary/ + best.th) with only the training file's words and characters, in
    `out`; returns how many entries were dropped. The shipped chunkers' `tokens` and
    `token_characters` embeddings have rows for words and characters of the test file (a
    vocabulary built with `train_vocab_only: false`), never looked up in training, so they keep
    their random initial values: the chunking student starts without them (from no test file;
    the tag vocabulary is left as it is). The training file's words (lowercased) and characters
    are those of every sentence of CoNLL-2000's train.txt, the held-out tenth included (the
    shipped chunkers' vocabulary read it too)."""
    import torch

    from ldnet_allennlp.tagging.dataset_readers.conll import ValidatingConll2000DatasetReader

    if (out / "best.th").exists():
        return {}
    allowed: Dict[str, Set[str]] = {"tokens": set(), "token_characters": set()}
    for instance in ValidatingConll2000DatasetReader().read(CHUNK_TRAIN):
        for token in instance["tokens"].tokens:
            allowed["tokens"].add(token.text.lower())
            allowed["token_characters"].update(token.text)
    dropped = {}
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(start / "vocabulary", partial / "vocabulary")
    state = torch.load(start / "best.th", map_location="cpu")
    for namespace, key in EMBEDDINGS.items():
        lines = (start / "vocabulary" / f"{namespace}.txt").read_text(encoding="utf-8")
        items = ["@@PADDING@@"] + lines.split("\n")[: -1 if lines.endswith("\n") else None]
        # the rows outside the training file's items, never padding (0) or OOV (1)
        drop = {i for i, item in enumerate(items) if i > 1 and item not in allowed[namespace]}
        keep = [i for i in range(len(items)) if i not in drop]
        state[key] = state[key][keep].clone()
        (partial / "vocabulary" / f"{namespace}.txt").write_text(
            "".join(items[i] + "\n" for i in keep[1:]), encoding="utf-8"
        )
        dropped[namespace] = len(drop)
    torch.save(state, partial / "best.th")
    shutil.copyfile(start / "config.json", partial / "config.json")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return dropped


def teacher_f1(archives: List[str], data_file: str) -> float:
    """Span F1 (`span_f1`, BIOUL) of the ensemble's silver tags (`silver_tags` of its averaged
    marginals) on a labelled file, read by the first archive's validation reader."""
    from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher, silver_tags

    teacher = CrfEnsembleTeacher(archives)
    instances = list(teacher.readers[0].read(data_file))
    words = [[t.text for t in i["tokens"].tokens] for i in instances]
    predicted: List[List[str]] = []
    for start in range(0, len(words), 64):
        marginals = teacher.marginals(words[start : start + 64])
        predicted += silver_tags(marginals, teacher.labels, teacher.label_encoding)
    gold = [list(i["tags"].labels) for i in instances]
    return span_f1(gold, predicted, "BIOUL", gold_encoding="BIOUL")


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
            "test_f1": manifest[f"{args.task}_pruned"]["test_f1"],
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
    """The task's table and headline keys for the student setting whose seeds are `--run`, and
    its dev F1 by setting."""
    task, key = load_results(RESULTS)[args.task], TASKS[args.task]["key"]
    table = summary_table(args, task)
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
        ([f"{key}_test_f1_student"], table["student"]["test_f1"]),
        ([f"{key}_test_f1_teacher"], table["teachers"]["test_f1"]),
        ([f"{key}_flops_ratio_student_vs_pruned"], flops["student"] / flops["pruned"]),
    )
    print(json.dumps(table, indent=1))


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: the student against its goal, the teacher, and the four rows of the table."""
    lines = []
    for task, name, goal in (("ner", "CoNLL-03", 91.0), ("chunk", "CoNLL-00", 95.0)):
        key = TASKS[task]["key"]
        if f"{key}_test_f1_student" not in results:  # stage summary writes every key at once
            continue
        figure = f"{name} test F1, pruned student (mean of seeds)"
        lines.append(headline(results, figure, f"{key}_test_f1_student", *at_least(goal)))
        figure = f"{name} student FLOPs per token / the shipped pruned tagger's"
        lines.append(
            headline(results, figure, f"{key}_flops_ratio_student_vs_pruned", *at_most(1.0))
        )
        figure = f"{name} test F1, teachers' ensemble"
        lines.append(headline(results, figure, f"{key}_test_f1_teacher"))
        lines += [headline(results, f"{name}: {row}", f"{task}.table.{row}") for row in ROWS]
        figure = f"{name} dev F1 of each student setting"
        lines.append(headline(results, figure, f"{task}.dev_f1_by_loss"))
        figure = f"{name} dev F1 against transfer-set sentences (the chosen setting)"
        lines.append(headline(results, figure, f"{task}.dev_f1_by_transfer_sentences"))
    return lines


STUDY = Study(
    name="pruned_students",
    description="Pruned LD-Net students distilled from an ensemble's CRF marginals.",
    results_file=RESULTS,
    stages=[
        Stage("text", stage_text, "the news sentences of the transfer sets"),
        Stage("transfer", stage_transfer, "teacher marginals over the first N sentences"),
        Stage("train", stage_train, "one student run"),
        Stage("teacher", stage_teacher, "dev F1 of the teachers and of their ensemble"),
        Stage("test", stage_test, "test F1 of the chosen students, once"),
        Stage("speed", stage_speed, "FLOPs/token and words/s, one interleaved run"),
        Stage("summary", stage_summary, "the table and headline keys of the chosen setting"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
