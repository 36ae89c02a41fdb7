"""
The runs of the `tagging` study, one at a time: the run table (`RUN_SPECS`), training (with
`--extend` and the wall-clock over resumed processes), test F1 and FLOPs (`evaluate`), the shipped
fp16 archive (`ship`), the dev-only record of the recipe search and of LM studies
(`dev_only_record`), and the command that reproduces a run.
"""

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.allennlp import epoch_metrics, training_seconds
from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.runs import trained
from benchmarks.studies.tagging_results import run_key

RUNS = ROOT / "runs" / "tagging"
DATA = {"ner": CONLL03, "chunk": CONLL00}
TEST = {"ner": CONLL03["CONLL03_TEST_DATA_PATH"], "chunk": CONLL00["CONLL00_TEST_DATA_PATH"]}
# run name -> config under training_configs/tagging, results key (None: recipe search, --dev-only)
RUNS_TABLE = {
    "ner_vanilla": ("ner_vanilla", "conll03_test_f1_vanilla"),
    "ner_ldnet": ("ner_ldnet", "conll03_test_f1_ldnet"),
    # *_lm_init: w_t initialised from the forward LM's word embeddings
    "ner_ldnet_lm_init": ("ner_ldnet_lm_init", "conll03_test_f1_ldnet_lm_init"),
    "ner_vanilla_lm_init": ("ner_vanilla_lm_init", "conll03_test_f1_vanilla_lm_init"),
    # *_glove: GloVe 6B 50d (frozen, whole index) added to the words (glove_words.libsonnet)
    "ner_ldnet_glove": ("ner_ldnet_glove", "conll03_test_f1_ldnet_glove"),
    "ner_vanilla_glove": ("ner_vanilla_glove", "conll03_test_f1_vanilla_glove"),
    "chunk_vanilla_glove": ("chunk_vanilla_glove", "conll00_test_f1_vanilla_glove"),
    "chunk_ldnet_glove": ("chunk_ldnet_glove", "conll00_test_f1_ldnet_glove"),
    "chunk_vanilla": ("chunk_vanilla", "conll00_test_f1_vanilla"),
    "chunk_ldnet": ("chunk_ldnet", "conll00_test_f1_ldnet"),
    "chunk_ldnet_lm_init": ("chunk_ldnet_lm_init", "conll00_test_f1_ldnet_lm_init"),
    # recipe search (issue 13; training_configs/tagging/recipe/): run with --dev-only, the dev F1
    # per epoch goes under recipe_search.<run> and the test file is never read
    "ner_vanilla_glove_min2": ("recipe/ner_vanilla_glove_min2", None),
    "ner_vanilla_glove_nowords": ("recipe/ner_vanilla_glove_nowords", None),
    "ner_vanilla_glove_sgd": ("recipe/ner_vanilla_glove_sgd", "conll03_test_f1_vanilla_glove_sgd"),
    "ner_ldnet_glove_sgd": ("recipe/ner_ldnet_glove_sgd", "conll03_test_f1_ldnet_glove_sgd"),
    "chunk_ldnet_glove_sgd": ("recipe/chunk_ldnet_glove_sgd", "conll00_test_f1_ldnet_glove_sgd"),
    "chunk_vanilla_glove_sgd": (
        "recipe/chunk_vanilla_glove_sgd",
        "conll00_test_f1_vanilla_glove_sgd",
    ),
    "ner_vanilla_glove_char_lstm": ("recipe/ner_vanilla_glove_char_lstm", None),
}
# run name -> (config, data variables, test file, results key)
RUN_SPECS = {
    name: (config, DATA[name.split("_")[0]], TEST[name.split("_")[0]], key)
    for name, (config, key) in RUNS_TABLE.items()
}


def run_env(name: str, args: argparse.Namespace) -> Dict[str, str]:
    """The variables the run's config reads: its data, the LMs, the LM's word vectors."""
    return {
        **RUN_SPECS[name][1],
        "FORWARD_LM_ARCHIVE": str(args.forward_lm),
        "BACKWARD_LM_ARCHIVE": str(args.backward_lm),
        "LM_WORD_VECTORS": str(word_vectors_file(args)),
    }


def word_vectors_file(args: argparse.Namespace) -> Path:
    """The forward LM's word embeddings as GloVe-format text, lowercased (*_lm_init)."""
    return RUNS / f"lm_word_vectors_lower_{Path(args.forward_lm).parent.name}.txt"


def seed_overrides(seed: Optional[int]) -> Dict[str, int]:
    """`--seed N` sets AllenNLP's three seeds (random, numpy, torch) to N."""
    if seed is None:
        return {}
    return {"random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed}


def log_path(key: str) -> Path:
    return RUNS / f"{key}.train.log"


def train(name: str, args: argparse.Namespace) -> None:
    """Trains (or resumes, or with `--extend` continues) the run; its wall-clock is added to
    `<key>.wallclock.json` even when the training fails."""
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    if (out / "model.tar.gz").exists() and args.epochs and args.extend:
        extend(key, args.epochs)
    if trained(out):
        print(f"[{key}] already trained: {out / 'model.tar.gz'}")
        return
    overrides = {"trainer.num_epochs": args.epochs} if args.epochs else {}
    overrides.update(seed_overrides(args.seed))
    RUNS.mkdir(parents=True, exist_ok=True)
    vectors = word_vectors_file(args)
    if name.endswith("_lm_init") and not vectors.exists():
        export = ["ldnet-export-word-vectors", str(args.forward_lm), str(vectors), "--lowercase"]
        allennlp.run_allennlp(export, log_path(key))
    config = ROOT / "training_configs" / "tagging" / f"{RUN_SPECS[name][0]}.jsonnet"
    print(f"[{key}] allennlp train {config} -s {out}  (log: {log_path(key)})", flush=True)
    start = time.time()
    try:
        env = run_env(name, args)
        allennlp.train(config, out, log_path(key), overrides, env, threads=args.threads)
    finally:
        clock = RUNS / f"{key}.wallclock.json"
        total = json.loads(clock.read_text())["seconds"] if clock.exists() else 0.0
        clock.write_text(json.dumps({"seconds": total + time.time() - start}))


def extend(key: str, epochs: int) -> None:
    """
    Continue a run that ended after fewer epochs than `epochs` (`--extend`): its config.json gets
    the new `trainer.num_epochs`, its archive and final metrics move aside, and `train` resumes it
    with `--recover` from its last checkpoint (optimizer, LR schedule and metric tracker continue
    where they stopped). The epochs it had are recorded as `extended_from_epochs`.
    """
    out = RUNS / key
    config_path = out / "config.json"
    config = json.loads(config_path.read_text())
    done = config["trainer"]["num_epochs"]
    if done >= epochs:
        return
    if not list(out.glob(f"training_state_e{done}_*.th")):
        raise SystemExit(f"[{key}] cannot extend: no checkpoint of epoch {done} in {out}")
    print(f"[{key}] extending from {done} to {epochs} epochs", flush=True)
    config["trainer"]["num_epochs"] = epochs
    config_path.write_text(json.dumps(config, indent=4))
    (out / "model.tar.gz").rename(out / f"model_{done}_epochs.tar.gz")
    (out / "metrics.json").rename(out / f"metrics_{done}_epochs.json")
    history = out / "extended_from_epochs.json"
    earlier = json.loads(history.read_text()) if history.exists() else []
    history.write_text(json.dumps(earlier + [done]))


def test_f1(name: str, args: argparse.Namespace, archive: Path, output: Path) -> float:
    """Test F1 (percent) of `archive`; the test file is read once per archive."""
    key = run_key(name, args.seed, args.lm_label)
    env = run_env(name, args)
    test_file = RUN_SPECS[name][2]
    metrics = allennlp.evaluate(
        archive, test_file, output, log_path(key), env=env, threads=args.threads
    )
    return 100.0 * metrics["f1-measure-overall"]


def evaluate(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """The run's test F1, its dev F1 by epoch, the best epoch, wall-clock and FLOPs per token."""
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    archive = out / "model.tar.gz"
    test = test_f1(name, args, archive, out / "test_metrics.json")
    dev = [m.get("validation_f1-measure-overall", 0.0) for m in epoch_metrics(out)]
    best_epoch = max(range(len(dev)), key=dev.__getitem__)
    result = {
        "test_f1": test,
        "dev_f1": 100.0 * dev[best_epoch],
        "dev_f1_by_epoch": [round(100.0 * f, 2) for f in dev],
        "epochs_trained": len(dev),
        "best_epoch": best_epoch,
        # false: the run was stopped (time budget) and its best checkpoint archived
        "completed": (out / "metrics.json").exists(),
        "train_wallclock_s": train_wallclock(key),
    }
    try:
        from allennlp.models.archival import load_archive

        import ldnet_allennlp  # noqa: F401
        from ldnet_allennlp.tagging.flops import flops_breakdown, flops_per_token

        model = load_archive(str(archive)).model
        result["flops_per_token"] = float(flops_per_token(model))
        result["flops_breakdown"] = {k: float(v) for k, v in flops_breakdown(model).items()}
    except ImportError as error:  # the FLOPs counter is optional here
        print(f"[{key}] no FLOPs: {error}")
    return result


def ship(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """
    The run's tagger as `pretrained/` ships it: `allennlp ldnet-prune --keep-all-layers --fp16
    --reference-lms` (no layer removed; weights in fp16; the frozen LM weights left out, named
    `pretrained:lm_*` when they are the shipped LMs) into `<run dir>/model_fp16.tar.gz`, and that
    archive's test F1 (the same model in half precision: a check that fp16 costs nothing, not a
    choice).
    """
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    archive, shipped = out / "model.tar.gz", out / "model_fp16.tar.gz"
    if not shipped.exists() or shipped.stat().st_mtime < archive.stat().st_mtime:
        prune = ["ldnet-prune", str(archive), "-o", str(shipped), "--keep-all-layers"]
        prune += ["--fp16", "--reference-lms"]
        allennlp.run_allennlp(prune, log_path(key), run_env(name, args), threads=args.threads)
    return {
        "test_f1_fp16": test_f1(name, args, shipped, out / "test_metrics_fp16.json"),
        "fp16_archive": os.path.relpath(shipped, ROOT),
        "fp16_archive_bytes": shipped.stat().st_size,
    }


def dev_f1_by_epoch(out: Path):
    return [
        round(100.0 * m.get("validation_f1-measure-overall", 0.0), 2) for m in epoch_metrics(out)
    ]


def dev_only_record(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """A recipe-search (or `--lm-label`) run's record: dev F1 per epoch and wall-clock."""
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    dev = dev_f1_by_epoch(out)
    result = {
        "config": f"training_configs/tagging/{RUN_SPECS[name][0]}.jsonnet",
        "dev_f1_by_epoch": dev,
        "best_dev_f1": max(dev) if dev else None,
        "epochs_trained": len(dev),
        # false: stopped before its last epoch (an archive may still exist: AllenNLP archives the
        # best epoch when a run is interrupted)
        "completed": (out / "metrics.json").exists(),
        "train_wallclock_s": train_wallclock(key),
        "command": reproduce_command(name, args.seed, args.lm_label) + " --dev-only",
    }
    history = out / "extended_from_epochs.json"
    if history.exists():
        # trained first for these epochs, then continued (--extend) to epochs_trained
        result["extended_from_epochs"] = json.loads(history.read_text())
    return result


def train_wallclock(key: str) -> Optional[float]:
    """
    The wall-clock of the run's training: what the benchmark timed around its `allennlp train`
    calls, or, when that is smaller (a call killed with its benchmark process records nothing),
    `training_seconds`.
    """
    clock = RUNS / f"{key}.wallclock.json"
    timed = json.loads(clock.read_text())["seconds"] if clock.exists() else None
    epochs = training_seconds(RUNS / key)
    candidates = [seconds for seconds in (timed, epochs) if seconds is not None]
    return max(candidates) if candidates else None


def lm_finetune_report() -> Dict[str, Any]:
    """
    ELMo-style domain transfer (issue 4 item 5), if it was run (commands in
    training_configs/tagging/lm_finetune_*.jsonnet): the LMs' perplexity on CoNLL-03 dev text
    before / after one epoch on CoNLL-03 train text, and ner_ldnet's dev F1 per epoch with the
    original LMs (runs/tagging/ner_ldnet) and with the fine-tuned ones
    (runs/tagging/ner_ldnet_lmft).
    """
    root = ROOT / "runs" / "lm_finetune"
    report: Dict[str, Any] = {}
    for direction in ("forward", "backward"):
        before = root / f"snapshot_{direction}.dev_metrics.json"
        after = root / direction / "metrics.json"
        if before.exists():
            perplexity = json.loads(before.read_text())["perplexity"]
            report[f"{direction}_dev_perplexity_before"] = perplexity
        if after.exists():
            perplexity = json.loads(after.read_text())["best_validation_perplexity"]
            report[f"{direction}_dev_perplexity_after"] = perplexity
    tuned = dev_f1_by_epoch(RUNS / "ner_ldnet_lmft")
    if tuned:
        report["ner_dev_f1_by_epoch_finetuned_lms"] = tuned
        original = dev_f1_by_epoch(RUNS / "ner_ldnet")
        report["ner_dev_f1_by_epoch_original_lms"] = original[: len(tuned)]
    return report


def project_path(path: str) -> str:
    """`path` relative to the project root when it lies inside it (commands run from there)."""
    if os.path.isabs(path) and Path(path).is_relative_to(ROOT):
        return os.path.relpath(path, ROOT)
    return path


def reproduce_command(name: str, seed: Optional[int] = None, lm_label: Optional[str] = None) -> str:
    """The command that trains `name` as it was trained: epochs and LMs read from its config."""
    config = json.loads((RUNS / run_key(name, seed, lm_label) / "config.json").read_text())
    command = f"python -m benchmarks tagging --runs {name}"
    command += f" --epochs {config['trainer']['num_epochs']}"
    if seed is not None:
        command += f" --seed {seed}"
    if lm_label is not None:
        command += f" --lm-label {lm_label}"
    embedders = config["model"]["text_field_embedder"]["token_embedders"]
    if "lm" in embedders:
        lm = embedders["lm"]
        command += f" --forward-lm {project_path(lm['forward_lm_archive'])}"
        command += f" --backward-lm {project_path(lm['backward_lm_archive'])}"
    return command
