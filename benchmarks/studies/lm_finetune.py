"""
The shipped LMs fine-tuned on a task's own text (ELMo's domain transfer), measured by the final
tagging recipe's dev F1 against the same recipe on the shipped LMs, at equal epochs.

    python -m benchmarks lm_finetune --task chunk --epochs 20 [--seed 2]
    python -m benchmarks lm_finetune --task ner --epochs 8 --stage record   # = --record-only

Stage `train` (every step skipped when its output exists): the task's training and dev text
(`scripts/conll_to_lm_text.py`; NER: eng.train / eng.testa; chunking: train.txt without / with
only the held-out tenth the chunkers are chosen on, so no LM reads dev sentences in training;
never a test file); both LMs fine-tuned side by side for `--lm-epochs` epochs, keeping the epoch
of lowest dev perplexity (`training_configs/tagging/lm_finetune_*.jsonnet`); the tagger on them
(`tagging --lm-label ft --dev-only`). Stage `record` writes tagging.json's
`lm_finetune_study.<task>`: the LMs' dev perplexity before (`allennlp evaluate` of the shipped
LMs) and after, their epochs and seconds, and every fine-tuned-LM tagger's dev F1 by epoch beside
the recipe's on the shipped LMs (every seed).
"""

import argparse
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.allennlp import duration_seconds
from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.study import Headline, Stage, Study
from benchmarks.studies.tagging import (
    SHIPPED_LMS,
    lm_study_arguments,
    recorded_command,
    train_on_lms,
    with_command,
)
from benchmarks.studies.tagging_results import (
    late_mean_headlines,
    run_key,
    seed_runs,
    write_results,
)
from scripts.conll_to_lm_text import convert

OUT = ROOT / "runs" / "lm_finetune"
DIRECTIONS = ("forward", "backward")
LM_LABEL = "ft"
# task -> (tagger run of the final recipe, text files: name -> (CoNLL file, holdout))
TRAIN03, DEV03 = CONLL03["CONLL03_TRAIN_DATA_PATH"], CONLL03["CONLL03_DEV_DATA_PATH"]
TRAIN00 = CONLL00["CONLL00_TRAIN_DATA_PATH"]
TASKS = {
    "ner": (
        "ner_ldnet_glove_sgd",
        {"conll03_train": (TRAIN03, None), "conll03_dev": (DEV03, None)},
    ),
    "chunk": (
        "chunk_ldnet_glove_sgd",
        {"conll00_train": (TRAIN00, "exclude"), "conll00_dev": (TRAIN00, "only")},
    ),
}


def texts(task: str) -> Dict[str, Path]:
    """The task's training and dev text, one sentence per line: {"train": path, "dev": path}."""
    paths = {}
    for name, (source, holdout) in TASKS[task][1].items():
        target = OUT / f"{name}.txt"
        if not target.exists():
            count = convert(source, str(target), holdout)
            print(f"{count} sentences -> {target}", flush=True)
        paths[name.rsplit("_", 1)[1]] = target
    return paths


def lm_overrides(lm_epochs: int) -> Dict[str, int]:
    """A dotted key: AllenNLP replaces a nested override's whole object ({"trainer": {...}}
    would drop the config's optimizer, clipping and validation metric for the trainer's
    defaults)."""
    return {"trainer.num_epochs": lm_epochs}


def finetune_lms(task: str, lm_epochs: int, threads: int) -> Dict[str, Path]:
    """Both directions fine-tuned side by side (`harness.allennlp.train`: a finished run is
    skipped, an interrupted one resumed); their archives."""
    text = texts(task)
    variables = {
        "FORWARD_LM_ARCHIVE": str(SHIPPED_LMS["forward"]),
        "BACKWARD_LM_ARCHIVE": str(SHIPPED_LMS["backward"]),
        "LM_FINETUNE_TRAIN_PATH": str(text["train"]),
        "LM_FINETUNE_DEV_PATH": str(text["dev"]),
    }

    def finetune(direction: str) -> bool:
        config = f"training_configs/tagging/lm_finetune_{direction}.jsonnet"
        out, log = OUT / f"{task}_{direction}", OUT / f"{task}_{direction}.log"
        return allennlp.train(config, out, log, lm_overrides(lm_epochs), variables, threads)

    with ThreadPoolExecutor(max_workers=len(DIRECTIONS)) as pool:
        list(pool.map(finetune, DIRECTIONS))
    return {d: OUT / f"{task}_{d}" / "model.tar.gz" for d in DIRECTIONS}


def perplexity_before(task: str, direction: str, threads: int) -> float:
    """The shipped LM's perplexity on the task's dev text (`allennlp evaluate`, once)."""
    output = OUT / f"{task}_{direction}_before.json"
    if not output.exists():
        reader = {"dataset_reader": {"type": "dense_lm_text", "max_sequence_length": 100}}
        dev, log = str(texts(task)["dev"]), OUT / f"{task}_{direction}_before.log"
        allennlp.evaluate(SHIPPED_LMS[direction], dev, output, log, reader, threads=threads)
    return json.loads(output.read_text())["perplexity"]


def lm_record(task: str, threads: int) -> Dict[str, Any]:
    """Per direction: dev perplexity before / after, the epochs run and the one kept, seconds."""
    record: Dict[str, Any] = {"dev_text": os.path.relpath(texts(task)["dev"], ROOT)}
    for direction in DIRECTIONS:
        out = OUT / f"{task}_{direction}"
        metrics = json.loads((out / "metrics.json").read_text())
        config = json.loads((out / "config.json").read_text())
        record[direction] = {
            "dev_perplexity_before": round(perplexity_before(task, direction, threads), 2),
            "dev_perplexity_after": round(metrics["best_validation_perplexity"], 2),
            "best_epoch": metrics["best_epoch"] + 1,
            "epochs": metrics["epoch"] + 1,
            "max_epochs": config["trainer"]["num_epochs"],
            "seconds": round(duration_seconds(metrics["training_duration"]), 1),
        }
    return record


def study(
    results: Dict[str, Any], task: str, lms: Dict[str, Any], command: Optional[str]
) -> Dict[str, Any]:
    """`lm_finetune_study.<task>` from `results` (tagging.json): the LMs' record `lms` and the
    taggers on fine-tuned and on shipped LMs over the fine-tuned taggers' epochs."""
    tagger = TASKS[task][0]
    tuned_name = run_key(tagger, None, LM_LABEL)
    rows = []
    tuned = {
        seed: results["lm_study"][run]
        for seed, run in seed_runs(results.get("lm_study", {}), tuned_name).items()
    }
    epochs = min((len(r["dev_f1_by_epoch"]) for r in tuned.values()), default=0)
    for which, runs in (("fine-tuned", tuned), ("shipped", shipped_runs(results, tagger))):
        for seed, record in sorted(runs.items()):
            dev = record["dev_f1_by_epoch"][:epochs]
            rows.append(
                {
                    "lms": which,
                    "seed": seed,
                    "dev_f1_by_epoch": dev,
                    "best_dev_f1": max(dev) if dev else None,
                    "command": record.get("command"),
                }
            )
    earlier = results.get("lm_finetune_study", {}).get(task, {}).get("commands", [])
    return {
        "lms": lms,
        "tagger": tagger,
        "epochs": epochs,
        "rows": rows,
        "commands": with_command(earlier, command),
    }


def shipped_runs(results: Dict[str, Any], tagger: str) -> Dict[str, Dict[str, Any]]:
    """The recipe's runs on the shipped LMs by seed, from their final records (or, before test
    was read, from recipe_search)."""
    runs = {}
    search = results.get("recipe_search", {})
    for source in (search, results):
        for seed, run in seed_runs(source, tagger).items():
            if isinstance(source[run], dict) and "dev_f1_by_epoch" in source[run]:
                runs.setdefault(seed, source[run])
    return runs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=list(TASKS), help="required by every stage")
    parser.add_argument("--seed", type=int, default=None, help="the tagger's seed (--seed N)")
    parser.add_argument("--lm-epochs", type=int, default=4, help="LM fine-tuning epochs")
    lm_study_arguments(parser, "the study")


def task_given(args: argparse.Namespace) -> None:
    if args.task is None:
        raise SystemExit(
            f"python -m benchmarks lm_finetune: --task is required ({', '.join(TASKS)})"
        )


def train(args: argparse.Namespace) -> None:
    """The task's text, both LMs fine-tuned, the tagger on them."""
    task_given(args)
    if not args.record_only:
        archives = finetune_lms(args.task, args.lm_epochs, args.threads)
        tagger = TASKS[args.task][0]
        train_on_lms(tagger, LM_LABEL, archives, args.epochs, args.threads, args.seed)


def record(args: argparse.Namespace) -> None:
    """`lm_finetune_study.<task>` rebuilt from the finished runs."""
    task_given(args)
    command, lms = recorded_command(args), lm_record(args.task, args.threads)
    write_results(
        lambda results: {
            "lm_finetune_study": {
                **results.get("lm_finetune_study", {}),
                args.task: study(results, args.task, lms, command),
            }
        }
    )
    print(f"lm_finetune_study.{args.task} written")


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task, each row's mean dev F1 over the late epochs: fine-tuned against shipped LMs."""
    lines = []
    for task in sorted(results.get("lm_finetune_study", {})):
        tagger = results["lm_finetune_study"][task]["tagger"]

        def figure(table: Dict[str, Any], row: List[Any], task: str = task) -> str:
            return f"{task}: {table['columns'][5]}, {row[0]} LMs, seed {row[1]}"

        caption = f"{task}: {tagger} on the shipped LMs"
        lines += late_mean_headlines(results, caption, 5, figure)
    return lines


STUDY = Study(
    name="lm_finetune",
    description="The shipped LMs fine-tuned on a task's own text (ELMo's domain transfer): the "
    "final recipe's dev F1 against the shipped LMs.",
    results_file="tagging.json",
    stages=[
        Stage(
            "train", train, "the task's text, both LMs fine-tuned, the tagger (not --record-only)"
        ),
        Stage("record", record, "rebuild tagging.json's lm_finetune_study.<task>"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
