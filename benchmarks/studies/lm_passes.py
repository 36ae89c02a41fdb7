"""
Dev F1 against LM passes (issue 13): the shipped NER recipe (`ner_ldnet_glove_sgd`) trained on
forward/backward LMs that saw P passes over the LM corpus, compared at equal epochs with the same
tagger on the shipped LMs and with the no-LM tagger (`ner_vanilla_glove_sgd`).

    python -m benchmarks lm_passes --passes 0 1 --epochs 8
    python -m benchmarks lm_passes --stage record --epochs 8     # = --record-only

For each P, every step is skipped when its output exists, so an interrupted call resumes (the
tagger with `allennlp train --recover`; an LM whose training was interrupted trains again from
its start, as the plain loop keeps no optimizer state, about 30 min per pass on one core):

1. `pack` (once): the LM corpus of `scripts/prepare_lm_corpus.py` plus the CoNLL-03 and CoNLL-00
   train words, as token ids, with the shipped LMs' vocabulary, so that every LM has the shipped
   LMs' size and vocabulary and differs from them only in what it was trained on.
2. The LMs: `scripts/pretrain_lms_accelerated.py train --passes P` with the shipped LMs' first
   stage settings (batch 256, Adam lr 0.002, seed 13; `--passes 0` keeps the seeded
   initialisation), then `archive`. The shipped LMs had 30 passes (`lm.json`).
3. The tagger: `python -m benchmarks tagging --runs ner_ldnet_glove_sgd --lm-label passP
   --epochs E --dev-only` (dev F1 per epoch on eng.testa; the test file is never read).
4. `tagging.json`'s `lm_passes`: per LM pair its passes, tokens, seconds and dev perplexity, and
   the tagger's dev F1 per epoch; beside them, for the first E epochs, the shipped LMs' taggers
   (every seed) and the no-LM taggers, read from their records.

Stage `train` does 1-3, stage `record` 4. The forward and backward LMs of a P train side by
side, everything else one process at a time, each with `--threads` threads. Calls with different
`--passes` may run at once: each adds its taggers to `tagging.json` (`lm_study.<run>`), and
`lm_passes` is rebuilt from all of them.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.results import command_line, load_results
from benchmarks.harness.study import Headline, Stage, Study, headline
from benchmarks.harness.timing import thread_env
from benchmarks.studies.tagging_results import (
    RESULTS,
    run_key,
    seed_runs,
    table_index,
    write_results,
)

PYTHON = sys.executable
LM_SCRIPT = ROOT / "scripts" / "pretrain_lms_accelerated.py"
STUDY_DIR = ROOT / "runs" / "lm_passes"
SHIPPED = {d: ROOT / "pretrained" / f"lm_{d}.tar.gz" for d in ("forward", "backward")}
SHIPPED_PASSES = 30  # lm.json: pretrain_accelerated_{forward,backward}.passes
SHIPPED_SIZE = (6, 128)  # training_configs/lm/dense_lm_*.jsonnet: num_layers, hidden_size
# an LM pair's label: `pass<P>` for the shipped size, `<layers>x<hidden>_pass<P>` for another
LABEL = re.compile(r"(?:(\d+)x(\d+)_)?pass(\d+)$")
TAGGER, NO_LM = "ner_ldnet_glove_sgd", "ner_vanilla_glove_sgd"
# the first stage of the shipped LMs (lm.json, pretrain_accelerated_*.stages[0])
LM_SETTINGS = ["--batch-size", "256", "--lr", "0.002", "--seed", "13"]


def run(command: List[Any], threads: int) -> None:
    print("+", " ".join(map(str, command)), flush=True)
    if subprocess.run(list(map(str, command)), cwd=ROOT, env=thread_env(threads)).returncode:
        raise SystemExit(f"failed: {' '.join(map(str, command))}")


def pack(threads: int) -> Path:
    """The corpus as ids under the shipped LMs' vocabulary (`runs/lm_passes/pack`)."""
    out = STUDY_DIR / "pack"
    if (out / "pack.json").exists():
        return out
    data = ROOT / "runs" / "lm_data"
    if not (data / "train.txt").exists():
        run([PYTHON, ROOT / "scripts" / "prepare_lm_corpus.py", "--output", data], threads)
    vocabulary = STUDY_DIR / "shipped_vocabulary"
    if not vocabulary.exists():
        with tarfile.open(SHIPPED["forward"]) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("vocabulary")]
            tar.extractall(STUDY_DIR / "shipped", members=members, filter="data")
        (STUDY_DIR / "shipped" / "vocabulary").rename(vocabulary)
    command = [PYTHON, LM_SCRIPT, "pack", "--train", data / "train.txt"]
    command += ["--train-conll", CONLL03["CONLL03_TRAIN_DATA_PATH"]]
    command += ["--train-conll", CONLL00["CONLL00_TRAIN_DATA_PATH"]]
    command += ["--vocabulary", vocabulary, "--dev", data / "dev.txt", "--output", out]
    run(command, threads)
    return out


def label(passes: int, size: Tuple[int, int]) -> str:
    return f"pass{passes}" if size == SHIPPED_SIZE else f"{size[0]}x{size[1]}_pass{passes}"


def parse_label(text: str) -> Optional[Tuple[int, Tuple[int, int]]]:
    """(passes, (layers, hidden)) of a `label`, None for anything else."""
    match = LABEL.match(text)
    if match is None:
        return None
    layers, hidden, passes = match.groups()
    return int(passes), (int(layers), int(hidden)) if layers else SHIPPED_SIZE


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
    """The forward and backward LMs of `size` after `passes` passes, side by side; their
    archives."""
    pack_dir = sized_pack(pack_dir, size)
    out = STUDY_DIR / label(passes, size)
    archives = {d: out / f"lm_{d}.tar.gz" for d in ("forward", "backward")}
    processes = []
    for direction in ("forward", "backward"):
        log = out / f"lm_{direction}.json"
        if log.exists() and len(json.loads(log.read_text()).get("passes", [])) >= passes:
            continue  # trained (the log is written after each pass; training that was
            # interrupted starts again from its beginning: the loop keeps no optimizer state)
        command = [PYTHON, LM_SCRIPT, "train", "--pack", pack_dir, "--direction", direction]
        command += ["--passes", str(passes), "--max-seconds", "1e9", *LM_SETTINGS]
        command += ["--output", out]
        print("+", " ".join(map(str, command)), flush=True)
        out.mkdir(parents=True, exist_ok=True)
        handle = open(out / f"train_{direction}.log", "a")
        processes.append(
            (subprocess.Popen(list(map(str, command)), env=thread_env(threads), stdout=handle), log)
        )
    for process, log in processes:
        if process.wait() != 0:
            raise SystemExit(f"LM training failed; see {log.parent}/train_*.log")
    for direction, archive in archives.items():
        if not archive.exists():
            command = [PYTHON, LM_SCRIPT, "archive", "--pack", pack_dir, "--direction", direction]
            command += ["--weights", out / f"lm_{direction}.th", "--output", archive]
            run(command, threads)
    return archives


def train_tagger(lm_label: str, archives: Dict[str, Path], epochs: int, threads: int) -> None:
    command = [PYTHON, "-m", "benchmarks", "tagging", "--runs", TAGGER]
    command += ["--lm-label", lm_label, "--epochs", str(epochs), "--dev-only"]
    # relative to the project root, as the recorded commands give them
    forward, backward = (os.path.relpath(archives[d], ROOT) for d in ("forward", "backward"))
    command += ["--forward-lm", forward, "--backward-lm", backward]
    command += ["--threads", str(threads)]
    run(command, threads)


def lm_record(lm_label: str) -> Dict[str, Any]:
    """What the LM training logs of `lm_label` say: size; tokens, seconds and dev perplexity per
    direction; `cpu_hours`, the two directions' training seconds on CPU together (None when
    either trained elsewhere)."""
    passes, (layers, hidden) = parse_label(lm_label)
    record: Dict[str, Any] = {"passes": passes, "num_layers": layers, "hidden_size": hidden}
    for direction in ("forward", "backward"):
        log = json.loads((STUDY_DIR / lm_label / f"lm_{direction}.json").read_text())
        done = log["passes"]
        record[direction] = {
            "dev_perplexity": round(log["best_dev_perplexity"], 2),
            "tokens": sum(p["tokens"] for p in done),
            "seconds": round(sum(p["seconds"] for p in done), 1),
            "tokens_per_sec": [p["tokens_per_sec"] for p in done],
            "device": log.get("device", "cpu"),
        }
    on_cpu = all(record[d]["device"] == "cpu" for d in ("forward", "backward"))
    seconds = sum(record[d]["seconds"] for d in ("forward", "backward"))
    record["cpu_hours"] = round(seconds / 3600, 2) if on_cpu else None
    return record


def study(epochs: int, command: Optional[str]) -> Dict[str, Any]:
    """`lm_passes`: every LM pair of the study and its tagger's dev F1 by epoch, beside the
    shipped LMs' and the no-LM taggers' first `epochs` epochs."""
    results, lm_json = load_results(RESULTS), load_results("lm")
    prefix = run_key(TAGGER, None, "")
    rows = []
    for key, record in sorted(results.get("lm_study", {}).items()):
        lm_label = key[len(prefix) :]
        if key.startswith(prefix) and parse_label(lm_label) is not None:
            rows.append({"lms": lm_record(lm_label), "run": key, **record})
    shipped = {"passes": SHIPPED_PASSES, "num_layers": SHIPPED_SIZE[0]}
    shipped.update(hidden_size=SHIPPED_SIZE[1], cpu_hours=None)  # trained on a GPU
    for direction in ("forward", "backward"):
        log = lm_json[f"pretrain_accelerated_{direction}"]
        shipped[direction] = {"dev_perplexity": log["best_dev_perplexity"]}
        shipped[direction]["tokens"] = log["tokens_seen"]
    for run, lms in ((TAGGER, shipped), (NO_LM, None)):
        for name in seed_runs(results, run).values():
            record = results[name]
            dev = record["dev_f1_by_epoch"][:epochs]
            rows.append({"lms": lms, "run": name, "dev_f1_by_epoch": dev, **pick(record)})
    rows.sort(key=lambda row: (-1,) if row["lms"] is None else order(row["lms"]))
    commands = results.get("lm_passes", {}).get("commands", [])
    return {
        "commands": commands + ([command] if command and command not in commands else []),
        "epochs": epochs,
        "rows": rows,
    }


def order(lms: Dict[str, Any]):
    """Rows by LM size, then passes."""
    return lms["num_layers"], lms["hidden_size"], lms["passes"]


def pick(record: Dict[str, Any]) -> Dict[str, Any]:
    keys = ("command", "epochs_trained", "train_wallclock_s")
    return {key: record[key] for key in keys if key in record}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passes", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--lm-size",
        default=f"{SHIPPED_SIZE[0]}x{SHIPPED_SIZE[1]}",
        help="the LMs' dense layers, LAYERSxHIDDEN (default: the shipped 6x128)",
    )
    parser.add_argument("--epochs", type=int, default=8, help="tagger epochs per LM pair")
    parser.add_argument("--threads", type=int, default=1, help="threads per process")
    parser.add_argument(
        "--record-only", action="store_true", help="only (re)write lm_passes from finished runs"
    )


def lm_size_option(text: str) -> Tuple[int, int]:
    """(layers, hidden) of `--lm-size` LAYERSxHIDDEN."""
    size = re.fullmatch(r"([1-9]\d*)x([1-9]\d*)", text)
    if size is None:
        raise SystemExit(f"--lm-size {text!r}: give LAYERSxHIDDEN, e.g. 6x64")
    return int(size.group(1)), int(size.group(2))


def train(args: argparse.Namespace) -> None:
    """Steps 1-3 for each of `--passes` (nothing with `--record-only`)."""
    if any(p < 0 for p in args.passes):
        raise SystemExit("--passes: counts of passes are >= 0")
    size = lm_size_option(args.lm_size)
    if args.record_only:
        return
    pack_dir = pack(args.threads)
    for passes in args.passes:
        archives = train_lms(passes, size, pack_dir, args.threads)
        train_tagger(label(passes, size), archives, args.epochs, args.threads)


def record(args: argparse.Namespace) -> None:
    """Step 4: `lm_passes` rebuilt from every finished run. Its command is recorded when this
    invocation trained (`--record-only` or `--stage record` measure nothing: the commands that
    trained the rows stay the record)."""
    trained_here = not args.record_only and (args.stages is None or "train" in args.stages)
    command = command_line() if trained_here else None
    write_results({"lm_passes": study(args.epochs, command)})
    print("lm_passes written to tagging.json")


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Each row's mean dev F1 over the late epochs, by LM size and passes (the table's)."""
    index = table_index(results, "Dev F1 (CoNLL-03 eng.testa) against LM size")
    if index is None:
        return []
    table, lines = results["summary"][index], []
    for row_index, row in enumerate(table["rows"]):
        passes = "pass" if row[2] == 1 else "passes"
        lms = "no LM" if row[1] == "none" else f"{row[1]} LMs, {row[2]} {passes}"
        figure = f"{table['columns'][7]}: {row[0]} ({lms})"
        lines.append(headline(results, figure, f"summary[{index}].rows[{row_index}][7]"))
    return lines


STUDY = Study(
    name="lm_passes",
    description="NER dev F1 against the LMs' size and passes over the LM corpus, beside the "
    "shipped LMs and no LM at equal epochs.",
    results_file="tagging.json",
    stages=[
        Stage("train", train, "pack, the LMs of each --passes, their tagger (not --record-only)"),
        Stage("record", record, "rebuild tagging.json's lm_passes from the finished runs"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
