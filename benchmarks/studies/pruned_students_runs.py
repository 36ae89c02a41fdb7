"""
The `pruned_students` study's runs (`pruned_students.py`) through the shared `Pipeline`: its
tasks and paths, the news text, the transfer sets, the student runs and their test F1, and the
chunking student's start. The shipped chunkers' `tokens` and `token_characters` embeddings have
rows for words and characters of the test file (a vocabulary built with `train_vocab_only:
false`), never looked up in training, so they keep their random initial values:
`restricted_start` is the chunking student's start without those rows (it depends on no test
file; the tag vocabulary is left as it is).
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
from benchmarks.harness.results import command_line, run_record, write_results
from benchmarks.studies.distillation_pipeline import Pipeline

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


def record(*items: Tuple[List[str], Any]) -> None:
    """For each `(path, value)`, sets results[path[0]]...[path[-1]] = value in the shared
    results file and appends the running command (its date and hardware, and the key it wrote)
    to `commands`; `hardware` becomes the machine of this latest run."""

    def updates(results: Dict[str, Any]) -> Dict[str, Any]:
        for path, value in items:
            node = results
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
            entry = run_record(wrote=".".join(path))
            results.setdefault("commands", []).append(entry)
            results["hardware"] = entry["hardware"]
        return results

    write_results(RESULTS, updates, replace=True)


def stage_text(args: argparse.Namespace) -> None:
    if NEWS.exists():
        return
    command = [sys.executable, "-m", "scripts.prepare_transfer_text", "--output", str(NEWS)]
    command += ["--data-dir", args.lm_text] if args.lm_text else []
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
    figures["path"] = "batched AllenNLP (ldnet_crf_tagger forward + crf_marginals), 1 thread"
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
    env["DISTILLATION_LOSS"] = args.loss
    for variable, value in (("DISTILLATION_WEIGHT", args.weight), ("STUDENT_LR", args.lr)):
        env[variable] = json.dumps(value)
    env["TRANSFER_SENTENCES"], env["STUDENT_EPOCHS"] = str(args.sentences), str(args.epochs)
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


def training_items() -> Dict[str, Set[str]]:
    """By namespace, the lowercased words and the characters of every sentence of CoNLL-2000's
    train.txt (the held-out tenth included: the shipped chunkers' vocabulary read it too)."""
    from ldnet_allennlp.tagging.dataset_readers.conll import ValidatingConll2000DatasetReader

    words, characters = set(), set()
    for instance in ValidatingConll2000DatasetReader().read(CHUNK_TRAIN):
        for token in instance["tokens"].tokens:
            words.add(token.text.lower())
            characters.update(token.text)
    return {"tokens": words, "token_characters": characters}


def restricted_start(start: Path, out: Path) -> Dict[str, int]:
    """`start` (vocabulary/ + best.th) with only the training file's words and characters, in
    `out`; returns how many entries were dropped."""
    import torch

    if (out / "best.th").exists():
        return {}
    allowed, dropped = training_items(), {}
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(start / "vocabulary", partial / "vocabulary")
    state = torch.load(start / "best.th", map_location="cpu")
    for namespace, key in EMBEDDINGS.items():
        lines = (start / "vocabulary" / f"{namespace}.txt").read_text(encoding="utf-8")
        items = ["@@PADDING@@"] + lines.split("\n")[: -1 if lines.endswith("\n") else None]
        # the rows outside the training file's items, never padding (0) or OOV (1)
        dropped_rows = {
            i for i, item in enumerate(items) if i > 1 and item not in allowed[namespace]
        }
        keep = [i for i in range(len(items)) if i not in dropped_rows]
        state[key] = state[key][keep].clone()
        (partial / "vocabulary" / f"{namespace}.txt").write_text(
            "".join(items[i] + "\n" for i in keep[1:]), encoding="utf-8"
        )
        dropped[namespace] = len(dropped_rows)
    torch.save(state, partial / "best.th")
    shutil.copyfile(start / "config.json", partial / "config.json")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return dropped
