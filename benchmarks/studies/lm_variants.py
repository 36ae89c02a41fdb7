"""
The final tagging recipe on LM pairs other than the shipped ones, measured by dev F1 against
the same recipe on the shipped LMs at equal epochs: the one implementation of two studies,
`lm_passes` (LM pairs of some size after P passes over the LM corpus, `PASSES`) and
`lm_finetune` (the shipped LMs fine-tuned on a task's own text, `FINETUNE`).

Stage `train` makes each LM pair, both directions side by side (every step skipped when its
output exists), then trains the tagger on it in a subprocess (`tagging --lm-label <label>
--dev-only`). Stage `record` rebuilds the study's section of
tagging.json from every finished run, so calls that train different pairs may run at once.
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.results import command_line, load_results
from benchmarks.harness.study import Headline, Stage, Study, headline
from benchmarks.harness.timing import thread_env
from benchmarks.studies.lm import DIRECTIONS, side_by_side, train_pair
from benchmarks.studies.tagging_results import (
    SHIPPED_SIZE,
    run_key,
    seed_runs,
    table_index,
    write_results,
)
from scripts.conll_to_lm_text import convert

PYTHON = sys.executable
LM_SCRIPT = ROOT / "scripts" / "pretrain_lms_accelerated.py"
Results = Dict[str, Any]
SHIPPED_LMS = {d: ROOT / "pretrained" / f"lm_{d}.tar.gz" for d in DIRECTIONS}


def variant_study(
    name: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    train: Callable[[argparse.Namespace], None],
    section: Callable[[Results, argparse.Namespace, Optional[str]], Results],
    summary: Callable[[Results], List[Headline]],
) -> Study:
    """A study of LM pairs writing tagging.json: stage `train` calls `train(args)`; stage
    `record` merges `section(results, args, command)` into tagging.json, `command` being this
    call's when it trained (None for `--stage record`, which measures nothing: the commands that
    trained the rows stay)."""

    def record(args: argparse.Namespace) -> None:
        trained_here = args.stages is None or "train" in args.stages
        command = command_line() if trained_here else None
        write_results(lambda results: section(results, args, command))
        print(f"{name}: tagging.json written")

    def arguments(parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)
        parser.add_argument("--epochs", type=int, default=8, help="tagger epochs")
        parser.add_argument("--threads", type=int, default=1, help="threads per process")

    stages = [
        Stage("train", train, "the LM pairs and their taggers"),
        Stage("record", record, "rebuild its section of tagging.json from the finished runs"),
    ]
    return Study(name, description, "tagging.json", stages, arguments, summary)


def late_mean_headlines(
    results: Results, caption: str, column: int, figure: Callable[[Dict, List], str]
) -> List[Headline]:
    """A headline per row of tagging.json's summary table whose caption starts with `caption`:
    the row's `column` (its late mean dev F1), named `figure(table, row)`."""
    index = table_index(results, caption)
    if index is None:
        return []
    table = results["summary"][index]
    return [
        headline(results, figure(table, row), f"summary[{index}].rows[{row_index}][{column}]")
        for row_index, row in enumerate(table["rows"])
    ]


def with_command(commands: List[str], command: Optional[str]) -> List[str]:
    """`commands` and `command` after them, once."""
    return commands + ([command] if command and command not in commands else [])


def train_on_lms(name: str, lm_label: str, archives: Dict, epochs: int, threads: int, seed=None):
    """`python -m benchmarks tagging --runs <name> --lm-label <lm_label> --dev-only` on the LM
    pair `archives` ({"forward": ..., "backward": ...}), in a subprocess: how both studies
    train their taggers."""
    command = [PYTHON, "-m", "benchmarks", "tagging", "--runs", name]
    command += ["--lm-label", lm_label, "--epochs", str(epochs), "--dev-only"]
    command += ["--threads", str(threads)] + (["--seed", str(seed)] if seed is not None else [])
    for direction in DIRECTIONS:  # relative to the root, as recorded commands are
        command += [f"--{direction}-lm", os.path.relpath(archives[direction], ROOT)]
    run_command(command, threads)


def run_command(command: List[Any], threads: int, log: Optional[Path] = None) -> None:
    """`command`, printed first, from the project root with `threads` OMP/MKL threads, its
    output appended to `log` when given; a failure stops the study."""
    command = list(map(str, command))
    print("+", " ".join(command), flush=True)
    with open(log, "a") if log else contextlib.nullcontext() as output:
        if subprocess.run(command, cwd=ROOT, env=thread_env(threads), stdout=output).returncode:
            raise SystemExit(f"failed: {' '.join(command)}" + (f"; see {log}" if log else ""))


# lm_passes: the LM pairs of `scripts/pretrain_lms_accelerated.py`, by size and passes

STUDY_DIR = ROOT / "runs" / "lm_passes"
SHIPPED_PASSES = 30  # lm.json: pretrain_accelerated_{forward,backward}.passes
TAGGER, NO_LM = "ner_ldnet_glove_sgd", "ner_vanilla_glove_sgd"
# the first stage of the shipped LMs (lm.json, pretrain_accelerated_*.stages[0])
LM_SETTINGS = ["--batch-size", "256", "--lr", "0.002", "--seed", "13"]


def pack(threads: int) -> Path:
    """The LM corpus plus the CoNLL-03 and CoNLL-00 train words as ids under the shipped LMs'
    vocabulary (`runs/lm_passes/pack`, made once)."""
    out = STUDY_DIR / "pack"
    if (out / "pack.json").exists():
        return out
    data = ROOT / "runs" / "lm_data"
    if not (data / "train.txt").exists():
        run_command([PYTHON, ROOT / "scripts" / "prepare_lm_corpus.py", "--output", data], threads)
    vocabulary = STUDY_DIR / "shipped_vocabulary"
    if not vocabulary.exists():
        with tarfile.open(SHIPPED_LMS["forward"]) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("vocabulary")]
            tar.extractall(STUDY_DIR / "shipped", members=members, filter="data")
        (STUDY_DIR / "shipped" / "vocabulary").rename(vocabulary)
    command = [PYTHON, LM_SCRIPT, "pack", "--train", data / "train.txt"]
    command += ["--train-conll", CONLL03["CONLL03_TRAIN_DATA_PATH"]]
    command += ["--train-conll", CONLL00["CONLL00_TRAIN_DATA_PATH"]]
    command += ["--vocabulary", vocabulary, "--dev", data / "dev.txt", "--output", out]
    run_command(command, threads)
    return out


def label(passes: int, size: Tuple[int, int]) -> str:
    """An LM pair's label: `pass<P>` for the shipped size, `<layers>x<hidden>_pass<P>` else."""
    return f"pass{passes}" if size == SHIPPED_SIZE else f"{size[0]}x{size[1]}_pass{passes}"


def parse_label(text: str) -> Optional[Tuple[int, Tuple[int, int]]]:
    """(passes, (layers, hidden)) of a `label`, None for anything else."""
    match = re.fullmatch(r"(?:(\d+)x(\d+)_)?pass(\d+)", text)
    if match is None:
        return None
    layers, hidden, passes = match.groups()
    return int(passes), (int(layers), int(hidden)) if layers else SHIPPED_SIZE


def lm_size(text: str) -> Tuple[int, int]:
    """(layers, hidden) of `--lm-size` LAYERSxHIDDEN."""
    size = re.fullmatch(r"([1-9]\d*)x([1-9]\d*)", text)
    if size is None:
        raise SystemExit(f"--lm-size {text!r}: give LAYERSxHIDDEN, e.g. 6x64")
    return int(size.group(1)), int(size.group(2))


def sized_pack(pack_dir: Path, size: Tuple[int, int]) -> Path:
    """`pack_dir` with the LMs' dense layers resized to `size` = (num_layers, hidden_size):
    the same corpus (linked) and vocabulary, everything else of the model as shipped."""
    if size == SHIPPED_SIZE:
        return pack_dir
    out = STUDY_DIR / f"pack_{size[0]}x{size[1]}"
    if (out / "pack.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.npz", "dev.npz"):
        if not (out / name).exists():
            (out / name).symlink_to((pack_dir / name).resolve())
    # copied: `archive` puts the vocabulary into the LM archives (a link there is refused)
    shutil.copytree(pack_dir / "vocabulary", out / "vocabulary", dirs_exist_ok=True)
    facts = json.loads((pack_dir / "pack.json").read_text())
    for settings in facts["model_settings"].values():
        settings["encoder"].update(num_layers=size[0], hidden_size=size[1])
    (out / "pack.json").write_text(json.dumps(facts, indent=2))
    return out


def train_lms(passes: int, size: Tuple[int, int], pack_dir: Path, threads: int) -> Dict[str, Path]:
    """The forward and backward LMs of `size` after `passes` passes with the shipped LMs'
    first-stage settings (0 passes: the seeded initialisation), side by side, then `archive`d;
    their archives. A direction whose log counts `passes` passes is done (the log is written
    after each pass: an LM interrupted mid-pass trains again from its start)."""
    pack_dir, out = sized_pack(pack_dir, size), STUDY_DIR / label(passes, size)

    def train(direction: str) -> Path:
        log, archive = out / f"lm_{direction}.json", out / f"lm_{direction}.tar.gz"
        if not log.exists() or len(json.loads(log.read_text()).get("passes", [])) < passes:
            command = [PYTHON, LM_SCRIPT, "train", "--pack", pack_dir, "--direction", direction]
            command += ["--passes", passes, "--max-seconds", "1e9", *LM_SETTINGS, "--output", out]
            out.mkdir(parents=True, exist_ok=True)
            run_command(command, threads, out / f"train_{direction}.log")
        if not archive.exists():
            command = [PYTHON, LM_SCRIPT, "archive", "--pack", pack_dir, "--direction", direction]
            command += ["--weights", out / f"lm_{direction}.th", "--output", archive]
            run_command(command, threads)
        return archive

    return side_by_side(train)


def train_passes(args: argparse.Namespace) -> None:
    """The pack, then for each of `--passes` the LMs and their tagger (`--lm-label pass<P>`)."""
    if min(args.passes) < 0:
        raise SystemExit("--passes: counts of passes are >= 0")
    pack_dir = pack(args.threads)
    for passes in args.passes:
        archives = train_lms(passes, args.lm_size, pack_dir, args.threads)
        train_on_lms(TAGGER, label(passes, args.lm_size), archives, args.epochs, args.threads)


def passes_lms(lm_label: str) -> Results:
    """What the LM training logs of `lm_label` say: size; tokens, seconds and dev perplexity per
    direction; `cpu_hours`, the two directions' training seconds on CPU together (None when
    either trained elsewhere)."""
    passes, (layers, hidden) = parse_label(lm_label)
    record: Results = {"passes": passes, "num_layers": layers, "hidden_size": hidden}
    for direction in DIRECTIONS:
        log = json.loads((STUDY_DIR / lm_label / f"lm_{direction}.json").read_text())
        done = log["passes"]
        record[direction] = {
            "dev_perplexity": round(log["best_dev_perplexity"], 2),
            "tokens": sum(p["tokens"] for p in done),
            "seconds": round(sum(p["seconds"] for p in done), 1),
            "device": log.get("device", "cpu"),
        }
    on_cpu = all(record[d]["device"] == "cpu" for d in DIRECTIONS)
    seconds = sum(record[d]["seconds"] for d in DIRECTIONS)
    record["cpu_hours"] = round(seconds / 3600, 2) if on_cpu else None
    return record


def passes_section(results: Results, args: argparse.Namespace, command: Optional[str]) -> Results:
    """`lm_passes`: the taggers on every LM pair of the study (`passes_lms`), on the shipped LMs
    and on no LM, the last two cut to the first `--epochs` epochs; no LM first, then by LM size
    and passes."""
    prefix, rows = run_key(TAGGER, None, ""), []
    for key, record in sorted(results.get("lm_study", {}).items()):
        lm_label = key[len(prefix) :]
        if key.startswith(prefix) and parse_label(lm_label) is not None:
            rows.append({"lms": passes_lms(lm_label), "run": key, **record})
    shipped = {"passes": SHIPPED_PASSES, "num_layers": SHIPPED_SIZE[0]}
    shipped.update(hidden_size=SHIPPED_SIZE[1], cpu_hours=None)  # trained on a GPU
    for direction in DIRECTIONS:
        log = load_results("lm")[f"pretrain_accelerated_{direction}"]
        shipped[direction] = {"dev_perplexity": log["best_dev_perplexity"]}
        shipped[direction]["tokens"] = log["tokens_seen"]
    kept = ("command", "epochs_trained", "train_wallclock_s")
    for run, lms in ((TAGGER, shipped), (NO_LM, None)):
        for name in seed_runs(results, run).values():
            record, row = results[name], {"lms": lms, "run": name}
            row["dev_f1_by_epoch"] = record["dev_f1_by_epoch"][: args.epochs]
            rows.append(row | {key: record[key] for key in kept if key in record})

    def order(row: Results) -> Tuple[int, ...]:
        lms = row["lms"]
        return (-1,) if lms is None else (lms["num_layers"], lms["hidden_size"], lms["passes"])

    commands = with_command(results.get("lm_passes", {}).get("commands", []), command)
    rows.sort(key=order)
    return {"lm_passes": {"commands": commands, "epochs": args.epochs, "rows": rows}}


def passes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passes", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--lm-size",
        type=lm_size,
        default=f"{SHIPPED_SIZE[0]}x{SHIPPED_SIZE[1]}",
        help="the LMs' dense layers, LAYERSxHIDDEN (default: the shipped 6x128)",
    )


def passes_summary(results: Results) -> List[Headline]:
    """Each row's mean dev F1 over the late epochs, by LM size and passes (the table's)."""

    def figure(table: Results, row: List[Any]) -> str:
        passes = "pass" if row[2] == 1 else "passes"
        lms = "no LM" if row[1] == "none" else f"{row[1]} LMs, {row[2]} {passes}"
        return f"{table['columns'][7]}: {row[0]} ({lms})"

    caption = "Dev F1 (CoNLL-03 eng.testa) against LM size"
    return late_mean_headlines(results, caption, 7, figure)


PASSES = variant_study(
    "lm_passes",
    "NER dev F1 against the LMs' size and passes over the LM corpus, beside the shipped LMs and "
    "no LM at equal epochs.",
    passes_arguments,
    train_passes,
    passes_section,
    passes_summary,
)


# lm_finetune: the shipped LMs fine-tuned on a task's text by `allennlp train`

OUT = ROOT / "runs" / "lm_finetune"
FINETUNED = "ft"  # the fine-tuned pairs' LM label
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
    """The task's training and dev text, one sentence per line: {"train": path, "dev": path}
    (`scripts/conll_to_lm_text.py`). NER: eng.train / eng.testa; chunking: train.txt without /
    with only the held-out tenth the chunkers are chosen on, so no LM reads dev sentences in
    training; never a test file."""
    paths = {}
    for name, (source, holdout) in TASKS[task][1].items():
        target = OUT / f"{name}.txt"
        if not target.exists():
            count = convert(source, str(target), holdout)
            print(f"{count} sentences -> {target}", flush=True)
        paths[name.rsplit("_", 1)[1]] = target
    return paths


def train_finetune(args: argparse.Namespace) -> None:
    """Both LMs fine-tuned on the task's text for `--lm-epochs` epochs, keeping the epoch of
    lowest dev perplexity (`training_configs/tagging/lm_finetune_*.jsonnet`, `lm.train_pair`);
    the shipped LMs' perplexity on its dev text (`allennlp evaluate`, once); then the tagger on
    the fine-tuned LMs (`--lm-label ft`)."""
    text = texts(args.task)
    variables = {
        "FORWARD_LM_ARCHIVE": str(SHIPPED_LMS["forward"]),
        "BACKWARD_LM_ARCHIVE": str(SHIPPED_LMS["backward"]),
        "LM_FINETUNE_TRAIN_PATH": str(text["train"]),
        "LM_FINETUNE_DEV_PATH": str(text["dev"]),
    }
    config = "training_configs/tagging/lm_finetune_{}.jsonnet"
    archives = train_pair(config, OUT / args.task, args.lm_epochs, variables, args.threads)
    reader = {"dataset_reader": {"type": "dense_lm_text", "max_sequence_length": 100}}
    for direction in DIRECTIONS:
        before = OUT / f"{args.task}_{direction}_before.json"
        if not before.exists():
            log = before.with_suffix(".log")
            allennlp.evaluate(SHIPPED_LMS[direction], str(text["dev"]), before, log, reader)
    tagger = TASKS[args.task][0]
    train_on_lms(tagger, FINETUNED, archives, args.epochs, args.threads, args.seed)


def finetune_lms(task: str) -> Results:
    """Per direction: dev perplexity before (the shipped LM's) and after, the epochs run and the
    one kept, seconds."""
    record: Results = {"dev_text": os.path.relpath(texts(task)["dev"], ROOT)}
    for direction in DIRECTIONS:
        out = OUT / f"{task}_{direction}"
        before = json.loads((OUT / f"{task}_{direction}_before.json").read_text())
        metrics = json.loads((out / "metrics.json").read_text())
        record[direction] = {
            "dev_perplexity_before": round(before["perplexity"], 2),
            "dev_perplexity_after": round(metrics["best_validation_perplexity"], 2),
            "best_epoch": metrics["best_epoch"] + 1,
            "epochs": metrics["epoch"] + 1,
            "seconds": round(allennlp.duration_seconds(metrics["training_duration"]), 1),
        }
    return record


def finetune_section(results: Results, args: argparse.Namespace, command: Optional[str]) -> Results:
    """`lm_finetune_study.<task>`: the LMs' record (`finetune_lms`), and the taggers on the
    fine-tuned and on the shipped LMs (every seed) over the fine-tuned taggers' epochs."""
    task, studied = args.task, results.get("lm_study", {})
    tagger = TASKS[task][0]
    tuned = {s: studied[r] for s, r in seed_runs(studied, run_key(tagger, None, FINETUNED)).items()}
    epochs = min((len(r["dev_f1_by_epoch"]) for r in tuned.values()), default=0)
    rows = []
    for which, runs in (("fine-tuned", tuned), ("shipped", shipped_runs(results, tagger))):
        for seed, record in sorted(runs.items()):
            dev = record["dev_f1_by_epoch"][:epochs]
            best = max(dev) if dev else None
            rows.append({"lms": which, "seed": seed, "dev_f1_by_epoch": dev, "best_dev_f1": best})
            rows[-1]["command"] = record.get("command")
    sections = results.get("lm_finetune_study", {})
    commands = with_command(sections.get(task, {}).get("commands", []), command)
    section = {"lms": finetune_lms(task), "tagger": tagger, "epochs": epochs, "rows": rows}
    return {"lm_finetune_study": {**sections, task: {**section, "commands": commands}}}


def shipped_runs(results: Results, tagger: str) -> Dict[str, Results]:
    """The recipe's runs on the shipped LMs by seed, from their final records (or, before test
    was read, from recipe_search)."""
    runs = {}
    search = results.get("recipe_search", {})
    for source in (search, results):
        for seed, run in seed_runs(source, tagger).items():
            if isinstance(source[run], dict) and "dev_f1_by_epoch" in source[run]:
                runs.setdefault(seed, source[run])
    return runs


def finetune_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=list(TASKS), required=True)
    parser.add_argument("--seed", type=int, default=None, help="the tagger's seed (--seed N)")
    parser.add_argument("--lm-epochs", type=int, default=4, help="LM fine-tuning epochs")


def finetune_summary(results: Results) -> List[Headline]:
    """Per task, each row's mean dev F1 over the late epochs: fine-tuned against shipped LMs."""
    lines = []
    for task in sorted(results.get("lm_finetune_study", {})):
        tagger = results["lm_finetune_study"][task]["tagger"]

        def figure(table: Results, row: List[Any], task: str = task) -> str:
            return f"{task}: {table['columns'][5]}, {row[0]} LMs, seed {row[1]}"

        lines += late_mean_headlines(results, f"{task}: {tagger} on the shipped LMs", 5, figure)
    return lines


FINETUNE = variant_study(
    "lm_finetune",
    "The shipped LMs fine-tuned on a task's own text (ELMo's domain transfer): the final "
    "recipe's dev F1 against the shipped LMs.",
    finetune_arguments,
    train_finetune,
    finetune_section,
    finetune_summary,
)
