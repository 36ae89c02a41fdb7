"""
Dev F1 against the LMs' size and passes: the final NER recipe (`ner_ldnet_glove_sgd`) on LM pairs
that saw P passes over the LM corpus, beside the same tagger on the shipped LMs and the no-LM
tagger (`ner_vanilla_glove_sgd`) at equal epochs.

    python -m benchmarks lm_passes --passes 0 1 --epochs 8 [--lm-size 6x64]
    python -m benchmarks lm_passes --stage record --epochs 8     # = --record-only

Stage `train`, for each P, skipping every step whose output exists (an LM interrupted mid-pass
trains again from its start): `pack` the LM corpus plus the CoNLL-03 and CoNLL-00 train words
as ids under the shipped LMs' vocabulary (once); train both directions side by side with
`scripts/pretrain_lms_accelerated.py train --passes P` and the shipped LMs' first-stage
settings (`--passes 0` keeps the seeded initialisation), then `archive`; train the tagger on
them (`tagging --lm-label passP --dev-only`). Stage `record` rebuilds tagging.json's
`lm_passes` from every finished run, so calls with different `--passes` may run at once.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.results import load_results
from benchmarks.harness.study import Headline, Stage, Study
from benchmarks.harness.timing import thread_env
from benchmarks.studies.tagging import (
    SHIPPED_LMS,
    lm_study_arguments,
    recorded_command,
    run_command,
    train_on_lms,
    with_command,
)
from benchmarks.studies.tagging_results import (
    RESULTS,
    late_mean_headlines,
    run_key,
    seed_runs,
    write_results,
)

PYTHON = sys.executable
LM_SCRIPT = ROOT / "scripts" / "pretrain_lms_accelerated.py"
STUDY_DIR = ROOT / "runs" / "lm_passes"
SHIPPED_PASSES = 30  # lm.json: pretrain_accelerated_{forward,backward}.passes
SHIPPED_SIZE = (6, 128)  # training_configs/lm/dense_lm_*.jsonnet: num_layers, hidden_size
# an LM pair's label: `pass<P>` for the shipped size, `<layers>x<hidden>_pass<P>` for another
LABEL = re.compile(r"(?:(\d+)x(\d+)_)?pass(\d+)$")
TAGGER, NO_LM = "ner_ldnet_glove_sgd", "ner_vanilla_glove_sgd"
# the first stage of the shipped LMs (lm.json, pretrain_accelerated_*.stages[0])
LM_SETTINGS = ["--batch-size", "256", "--lr", "0.002", "--seed", "13"]


def pack(threads: int) -> Path:
    """The corpus as ids under the shipped LMs' vocabulary (`runs/lm_passes/pack`)."""
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
            continue  # trained: the log is written after each pass
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
            run_command(command, threads)
    return archives


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
    rows.sort(key=order)
    return {
        "commands": with_command(results.get("lm_passes", {}).get("commands", []), command),
        "epochs": epochs,
        "rows": rows,
    }


def order(row: Dict[str, Any]) -> Tuple[int, ...]:
    """No LM first, then by LM size and passes."""
    lms = row["lms"]
    return (-1,) if lms is None else (lms["num_layers"], lms["hidden_size"], lms["passes"])


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
    lm_study_arguments(parser, "lm_passes")


def lm_size_option(text: str) -> Tuple[int, int]:
    """(layers, hidden) of `--lm-size` LAYERSxHIDDEN."""
    size = re.fullmatch(r"([1-9]\d*)x([1-9]\d*)", text)
    if size is None:
        raise SystemExit(f"--lm-size {text!r}: give LAYERSxHIDDEN, e.g. 6x64")
    return int(size.group(1)), int(size.group(2))


def train(args: argparse.Namespace) -> None:
    """Pack, LMs and tagger for each of `--passes` (nothing with `--record-only`)."""
    if any(p < 0 for p in args.passes):
        raise SystemExit("--passes: counts of passes are >= 0")
    size = lm_size_option(args.lm_size)
    if args.record_only:
        return
    pack_dir = pack(args.threads)
    for passes in args.passes:
        archives = train_lms(passes, size, pack_dir, args.threads)
        train_on_lms(TAGGER, label(passes, size), archives, args.epochs, args.threads)


def record(args: argparse.Namespace) -> None:
    """`lm_passes` rebuilt from every finished run."""
    write_results({"lm_passes": study(args.epochs, recorded_command(args))})
    print("lm_passes written to tagging.json")


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Each row's mean dev F1 over the late epochs, by LM size and passes (the table's)."""

    def figure(table: Dict[str, Any], row: List[Any]) -> str:
        passes = "pass" if row[2] == 1 else "passes"
        lms = "no LM" if row[1] == "none" else f"{row[1]} LMs, {row[2]} {passes}"
        return f"{table['columns'][7]}: {row[0]} ({lms})"

    caption = "Dev F1 (CoNLL-03 eng.testa) against LM size"
    return late_mean_headlines(results, caption, 7, figure)


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
