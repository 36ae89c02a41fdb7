"""
LD-Net tagging on real data (issue 4): trains the no-LM baselines and the LD-Net taggers on
CoNLL-03 NER and CoNLL-00 chunking into `runs/tagging/<run>/`, scores the test sets with
`allennlp evaluate`, counts FLOPs per token, and writes `benchmarks/results/tagging.json`.

    .venv/bin/python benchmarks/tagging_benchmark.py                       # all four runs
    .venv/bin/python benchmarks/tagging_benchmark.py --runs ner_vanilla chunk_vanilla --epochs 8
    .venv/bin/python benchmarks/tagging_benchmark.py --runs ner_ldnet \\
        --forward-lm runs/lm_forward/model.tar.gz --backward-lm runs/lm_backward/model.tar.gz

Re-runnable and resumable: a run whose `model.tar.gz` exists is not trained again; a run whose
serialization dir exists without an archive is resumed with `allennlp train --recover` (so the
`--epochs` of a resumed run must be the one it was started with).  Wall-clock is summed over
all the (resumed) training processes of a run (`train_wallclock_s`; where a process was killed
with its benchmark call, which then recorded nothing, AllenNLP's own epoch clock summed over
the processes, when that is larger).  Several invocations may run at once (one per
run); each merges its figures into the JSON file.

LM fine-tuning on the task text (ELMo domain transfer): for the final recipe and the shipped
LMs, `benchmarks/lm_finetune_benchmark.py` runs it end to end (`lm_finetune_study`). The earlier
study of issue 4 (`lm_finetune`, snapshot LMs, Adam recipe) was run by hand with the commands in
training_configs/tagging/lm_finetune_{forward,backward}.jsonnet and ner_ldnet trained into
runs/tagging/ner_ldnet_lmft; `--lm-finetune-report` records it.

Pretrained word vectors (there is no GloVe here): `--runs ner_ldnet_lm_init` trains ner_ldnet with
its word embeddings initialised from the forward LM's (exported once with
`allennlp ldnet-export-word-vectors --lowercase`), key conll03_test_f1_ldnet_lm_init; likewise
ner_vanilla_lm_init and chunk_ldnet_lm_init (configs from lm_word_vectors.libsonnet).

Keys (F1 in percent): conll03_test_f1_{ldnet,vanilla}, conll00_test_f1_{ldnet,vanilla}, and per
run `<run>.{test_f1, dev_f1, epochs_trained, best_epoch, train_wallclock_s, flops_per_token}`.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import (  # noqa: E402
    ALLENNLP,
    CONLL00,
    CONLL03,
    ROOT,
    Updates,
    duration_seconds,
    trained,
    update_results_file,
)

RESULTS = ROOT / "benchmarks" / "results" / "tagging.json"
RUNS = ROOT / "runs" / "tagging"

# run name -> (config, data variables, test file, results key)
RUN_SPECS = {
    "ner_vanilla": (
        "ner_vanilla",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_vanilla",
    ),
    "ner_ldnet": ("ner_ldnet", CONLL03, CONLL03["CONLL03_TEST_DATA_PATH"], "conll03_test_f1_ldnet"),
    # *_lm_init: w_t initialised from the forward LM's word embeddings (no GloVe here)
    "ner_ldnet_lm_init": (
        "ner_ldnet_lm_init",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_ldnet_lm_init",
    ),
    "ner_vanilla_lm_init": (
        "ner_vanilla_lm_init",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_vanilla_lm_init",
    ),
    # *_glove: GloVe 6B 50d (frozen, whole index) added to the words (glove_words.libsonnet)
    "ner_ldnet_glove": (
        "ner_ldnet_glove",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_ldnet_glove",
    ),
    "ner_vanilla_glove": (
        "ner_vanilla_glove",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_vanilla_glove",
    ),
    "chunk_vanilla_glove": (
        "chunk_vanilla_glove",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_vanilla_glove",
    ),
    "chunk_ldnet_glove": (
        "chunk_ldnet_glove",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_ldnet_glove",
    ),
    "chunk_vanilla": (
        "chunk_vanilla",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_vanilla",
    ),
    "chunk_ldnet": (
        "chunk_ldnet",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_ldnet",
    ),
    "chunk_ldnet_lm_init": (
        "chunk_ldnet_lm_init",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_ldnet_lm_init",
    ),
    # recipe search (issue 13; training_configs/tagging/recipe/): run with --dev-only, the dev F1
    # per epoch goes under recipe_search.<run> and the test file is never read
    "ner_vanilla_glove_min2": (
        "recipe/ner_vanilla_glove_min2",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        None,
    ),
    "ner_vanilla_glove_nowords": (
        "recipe/ner_vanilla_glove_nowords",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        None,
    ),
    "ner_vanilla_glove_sgd": (
        "recipe/ner_vanilla_glove_sgd",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_vanilla_glove_sgd",
    ),
    "ner_ldnet_glove_sgd": (
        "recipe/ner_ldnet_glove_sgd",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        "conll03_test_f1_ldnet_glove_sgd",
    ),
    "chunk_ldnet_glove_sgd": (
        "recipe/chunk_ldnet_glove_sgd",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_ldnet_glove_sgd",
    ),
    "chunk_vanilla_glove_sgd": (
        "recipe/chunk_vanilla_glove_sgd",
        CONLL00,
        CONLL00["CONLL00_TEST_DATA_PATH"],
        "conll00_test_f1_vanilla_glove_sgd",
    ),
    "ner_vanilla_glove_char_lstm": (
        "recipe/ner_vanilla_glove_char_lstm",
        CONLL03,
        CONLL03["CONLL03_TEST_DATA_PATH"],
        None,
    ),
}


def run_env(spec_vars: Dict[str, str], args) -> Dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.update(spec_vars)
    env["FORWARD_LM_ARCHIVE"] = str(args.forward_lm)
    env["BACKWARD_LM_ARCHIVE"] = str(args.backward_lm)
    env["LM_WORD_VECTORS"] = str(word_vectors_file(args))
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
        env["MKL_NUM_THREADS"] = str(args.threads)
    return env


def word_vectors_file(args) -> Path:
    """The forward LM's word embeddings as GloVe-format text, lowercased (ner_ldnet_lm_init)."""
    return RUNS / f"lm_word_vectors_lower_{Path(args.forward_lm).parent.name}.txt"


SEED_SUFFIX = "_seed"


LM_LABEL_INFIX = "_lm-"


def run_key(name: str, seed: Optional[int], lm_label: Optional[str] = None) -> str:
    """The run's folder under runs/tagging/ and its key in the results: `<run>` for AllenNLP's
    default seeds (random 13370, numpy 1337, torch 133), `<run>_seed<N>` for `--seed N`, with
    `_lm-<label>` after `<run>` for `--lm-label <label>` (a study of other LMs)."""
    key = name if lm_label is None else f"{name}{LM_LABEL_INFIX}{lm_label}"
    return key if seed is None else f"{key}{SEED_SUFFIX}{seed}"


def epoch_metrics(out: Path) -> List[Dict[str, Any]]:
    """AllenNLP's metrics_epoch_<N>.json of a run, in epoch order."""
    epochs = sorted(out.glob("metrics_epoch_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    return [json.loads(p.read_text()) for p in epochs]


def seed_overrides(seed: Optional[int]) -> Dict[str, int]:
    """`--seed N` sets AllenNLP's three seeds (random, numpy, torch) to N."""
    if seed is None:
        return {}
    return {"random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed}


def train(name: str, args) -> None:
    config, spec_vars, _, _ = RUN_SPECS[name]
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    if (out / "model.tar.gz").exists() and args.epochs and args.extend:
        extend(key, args.epochs)
    if trained(out):
        print(f"[{key}] already trained: {out / 'model.tar.gz'}")
        return
    command = [
        ALLENNLP,
        "train",
        str(ROOT / "training_configs" / "tagging" / f"{config}.jsonnet"),
        "-s",
        str(out),
        "--include-package",
        "ldnet_allennlp",
    ]
    overrides = {"trainer.num_epochs": args.epochs} if args.epochs else {}
    overrides.update(seed_overrides(args.seed))
    if overrides:
        command += ["-o", json.dumps(overrides)]
    if (out / "config.json").exists():
        command.append("--recover")
    RUNS.mkdir(parents=True, exist_ok=True)
    vectors = word_vectors_file(args)
    if name.endswith("_lm_init") and not vectors.exists():
        export = [ALLENNLP, "ldnet-export-word-vectors", str(args.forward_lm), str(vectors)]
        subprocess.run(export + ["--lowercase", "--include-package", "ldnet_allennlp"], check=True)
    log_path = RUNS / f"{key}.train.log"
    print(f"[{key}] {' '.join(command)}  (log: {log_path})", flush=True)
    start = time.time()
    with open(log_path, "a") as log:
        process = subprocess.run(
            command, cwd=ROOT, env=run_env(spec_vars, args), stdout=log, stderr=log
        )
    elapsed = time.time() - start
    clock = RUNS / f"{key}.wallclock.json"
    total = json.loads(clock.read_text())["seconds"] if clock.exists() else 0.0
    clock.write_text(json.dumps({"seconds": total + elapsed}))
    if process.returncode != 0:
        raise SystemExit(f"[{key}] training failed; see {log_path}")


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
    trained = config["trainer"]["num_epochs"]
    if trained >= epochs:
        return
    if not list(out.glob(f"training_state_e{trained}_*.th")):
        raise SystemExit(f"[{key}] cannot extend: no checkpoint of epoch {trained} in {out}")
    print(f"[{key}] extending from {trained} to {epochs} epochs", flush=True)
    config["trainer"]["num_epochs"] = epochs
    config_path.write_text(json.dumps(config, indent=4))
    (out / "model.tar.gz").rename(out / f"model_{trained}_epochs.tar.gz")
    (out / "metrics.json").rename(out / f"metrics_{trained}_epochs.json")
    history = out / "extended_from_epochs.json"
    earlier = json.loads(history.read_text()) if history.exists() else []
    history.write_text(json.dumps(earlier + [trained]))


def evaluate_once(archive: Path, test_file: str, output: Path, env: Dict[str, str]) -> None:
    """`allennlp evaluate` of `archive` on `test_file` into `output`, unless `output` is already
    there and newer than the archive (the test is read once per model)."""
    if not output.exists() or output.stat().st_mtime < archive.stat().st_mtime:
        subprocess.run(
            [ALLENNLP, "evaluate", str(archive), test_file, "--output-file", str(output)]
            + ["--include-package", "ldnet_allennlp"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )


def evaluate(name: str, args) -> Dict[str, Any]:
    _, spec_vars, test_file, _ = RUN_SPECS[name]
    key = run_key(name, args.seed, args.lm_label)
    out = RUNS / key
    archive = out / "model.tar.gz"
    test_metrics = out / "test_metrics.json"
    evaluate_once(archive, test_file, test_metrics, run_env(spec_vars, args))
    per_epoch = epoch_metrics(out)
    dev = [m.get("validation_f1-measure-overall", 0.0) for m in per_epoch]
    best_epoch = max(range(len(dev)), key=dev.__getitem__)
    test = json.loads(test_metrics.read_text())
    result = {
        "test_f1": 100.0 * test["f1-measure-overall"],
        "dev_f1": 100.0 * dev[best_epoch],
        "dev_f1_by_epoch": [round(100.0 * f, 2) for f in dev],
        "epochs_trained": len(per_epoch),
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
    except ImportError as error:  # the FLOPs counter is optional for this script
        print(f"[{key}] no FLOPs: {error}")
    return result


def ship(name: str, args) -> Dict[str, Any]:
    """
    The run's tagger as `pretrained/` ships it: `allennlp ldnet-prune --keep-all-layers --fp16
    --reference-lms` (no layer removed; weights in fp16; the frozen LM weights left out, named
    `pretrained:lm_*` when they are the shipped LMs) into `<run dir>/model_fp16.tar.gz`, and that
    archive's test F1 (the same model in half precision: a check that fp16 costs nothing, not a
    choice).
    """
    _, spec_vars, test_file, _ = RUN_SPECS[name]
    out = RUNS / run_key(name, args.seed, args.lm_label)
    archive, shipped = out / "model.tar.gz", out / "model_fp16.tar.gz"
    test_metrics = out / "test_metrics_fp16.json"
    env = run_env(spec_vars, args)
    if not shipped.exists() or shipped.stat().st_mtime < archive.stat().st_mtime:
        subprocess.run(
            [ALLENNLP, "ldnet-prune", str(archive), "-o", str(shipped), "--keep-all-layers"]
            + ["--fp16", "--reference-lms", "--include-package", "ldnet_allennlp"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
    evaluate_once(shipped, test_file, test_metrics, env)
    return {
        "test_f1_fp16": 100.0 * json.loads(test_metrics.read_text())["f1-measure-overall"],
        "fp16_archive": os.path.relpath(shipped, ROOT),
        "fp16_archive_bytes": shipped.stat().st_size,
    }


def dev_f1_by_epoch(out: Path):
    return [
        round(100.0 * m.get("validation_f1-measure-overall", 0.0), 2) for m in epoch_metrics(out)
    ]


def record_dev_only(name: str, args) -> None:
    """A recipe-search run: its dev F1 per epoch and wall-clock, under `recipe_search.<run>`
    (`lm_study.<run>` for a run on other LMs, `--lm-label`)."""
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
    print(f"[{key}] {json.dumps(result)}", flush=True)
    # runs on other LMs (--lm-label) are a study of the LMs, not a recipe choice
    section = "recipe_search" if args.lm_label is None else "lm_study"
    write_results(lambda current: {section: {**current.get(section, {}), key: result}})


def training_seconds(out: Path) -> Optional[float]:
    """
    AllenNLP's own clock summed over a run's training processes: each epoch's
    `training_duration` counts from the start of its process, so a process's time is the
    duration of its last epoch, and a resumed (`--recover`) process starts again from 0.
    """
    total, last = 0.0, None
    for metrics in epoch_metrics(out):
        duration = duration_seconds(metrics["training_duration"])
        if last is not None and duration < last:  # a new process began
            total += last
        last = duration
    return None if last is None else total + last


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
            report[f"{direction}_dev_perplexity_before"] = json.loads(before.read_text())[
                "perplexity"
            ]
        if after.exists():
            report[f"{direction}_dev_perplexity_after"] = json.loads(after.read_text())[
                "best_validation_perplexity"
            ]
    tuned = dev_f1_by_epoch(RUNS / "ner_ldnet_lmft")
    if tuned:
        report["ner_dev_f1_by_epoch_finetuned_lms"] = tuned
        report["ner_dev_f1_by_epoch_original_lms"] = dev_f1_by_epoch(RUNS / "ner_ldnet")[
            : len(tuned)
        ]
    return report


def project_path(path: str) -> str:
    """`path` relative to the project root when it lies inside it (commands run from there)."""
    if os.path.isabs(path) and Path(path).is_relative_to(ROOT):
        return os.path.relpath(path, ROOT)
    return path


def reproduce_command(name: str, seed: Optional[int] = None, lm_label: Optional[str] = None) -> str:
    """The command that trains `name` as it was trained: epochs and LMs read from its config."""
    config = json.loads((RUNS / run_key(name, seed, lm_label) / "config.json").read_text())
    command = f"python benchmarks/tagging_benchmark.py --runs {name}"
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


# summary rows: (run, task, baseline run, goal on test F1)
SUMMARY_ROWS = (
    ("ner_vanilla", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet", "CoNLL-03 NER", "ner_vanilla", 90.0),
    ("ner_vanilla_lm_init", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_lm_init", "CoNLL-03 NER", "ner_vanilla_lm_init", 90.0),
    ("ner_vanilla_glove", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_glove", "CoNLL-03 NER", "ner_vanilla_glove", 91.0),
    ("ner_vanilla_glove_sgd", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_glove_sgd", "CoNLL-03 NER", "ner_vanilla_glove_sgd", 91.0),
    ("chunk_vanilla", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet", "CoNLL-00 chunking", "chunk_vanilla", 95.0),
    ("chunk_ldnet_lm_init", "CoNLL-00 chunking", "chunk_vanilla_lm_init", 95.0),
    ("chunk_vanilla_glove", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet_glove", "CoNLL-00 chunking", "chunk_vanilla_glove", 95.0),
    ("chunk_vanilla_glove_sgd", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet_glove_sgd", "CoNLL-00 chunking", "chunk_vanilla_glove_sgd", 95.0),
)
TAGGERS = {
    "vanilla": "no LM (char CNN + words)",
    "ldnet": "LD-Net features",
    "ldnet_lm_init": "LD-Net features, words from the LM",
    "vanilla_lm_init": "no LM, words from the LM",
    "ldnet_glove": "LD-Net features + GloVe 50d",
    "vanilla_glove": "no LM + GloVe 50d",
    "ldnet_glove_sgd": "LD-Net features + GloVe 50d, LD-Net's SGD recipe",
    "vanilla_glove_sgd": "no LM + GloVe 50d, LD-Net's SGD recipe",
}


# Issue 13's results keys -> the run behind each (its config header says what chose it on dev).
# Each key holds the mean test F1 over the run's seeds (`<run>` with AllenNLP's default seeds and
# every `<run>_seed<N>` evaluated); `final.<key>` lists them. A key whose run has no test F1 yet
# keeps its earlier value, and `final.<key>.run` says so.
FINAL_RUNS = {
    "conll03_test_f1_ldnet": "ner_ldnet_glove_sgd",
    "conll03_test_f1_vanilla": "ner_vanilla_glove_sgd",
    "conll00_test_f1_ldnet": "chunk_ldnet_glove_sgd",
    "conll00_test_f1_vanilla": "chunk_vanilla_glove_sgd",
}


def seed_runs(results: Dict[str, Any], name: str) -> Dict[str, str]:
    """`name`'s runs among the keys of `results`, by seed: "default" -> `<run>` (AllenNLP's
    seeds), "N" -> `<run>_seed<N>`."""
    runs = {}
    for run in sorted(results):
        seed = run[len(name + SEED_SUFFIX) :]
        if run == name:
            runs["default"] = run
        elif run.startswith(name + SEED_SUFFIX) and seed.isdigit():
            runs[seed] = run
    return runs


def final_results(results: Dict[str, Any]) -> Dict[str, Any]:
    """The mean over seeds of each of FINAL_RUNS' runs that has a test F1."""
    final = {}
    for key, name in FINAL_RUNS.items():
        by_seed = {
            seed: results[run]["test_f1"]
            for seed, run in seed_runs(results, name).items()
            if isinstance(results[run], dict) and "test_f1" in results[run]
        }
        if by_seed:
            final[key] = {
                "run": name,
                "test_f1_by_seed": {seed: round(f1, 2) for seed, f1 in by_seed.items()},
                "seeds": len(by_seed),
                "mean": sum(by_seed.values()) / len(by_seed),
            }
    return final


def limits(results: Dict[str, Any]) -> List[str]:
    """What the final runs' own records say limits their F1, one line per key and seed: epochs
    (was dev F1 still rising at the last epoch?), the dev-test gap, the cost of an epoch on this
    CPU."""
    lines = []
    for key, record in results.get("final", {}).items():
        for seed in record.get("test_f1_by_seed", {"default": None}):
            name = record["run"] if seed == "default" else run_key(record["run"], int(seed))
            run = results.get(name)
            if not run:
                continue
            dev, epochs = run["dev_f1_by_epoch"], run["epochs_trained"]
            best = run["best_epoch"]
            trend = (
                "its last epoch: dev F1 still rising when it stopped"
                if best == epochs - 1
                else f"then no better for {epochs - 1 - best} more epoch(s)"
            )
            wallclock = run.get("train_wallclock_s")
            minutes = wallclock / 60 / epochs if wallclock else None
            lines.append(
                f"{key} ({name}): best dev F1 {dev[best]:.2f} at epoch {best + 1} of "
                f"{epochs}, {trend}; test {run['test_f1']:.2f}, "
                f"{run['dev_f1'] - run['test_f1']:.2f} below dev"
                + (f"; {minutes:.1f} min per epoch on one core" if minutes else "")
            )
    if results.get("lm_passes"):
        lines.append(lm_passes_limit(results["lm_passes"]))
    for task, study in sorted(results.get("lm_finetune_study", {}).items()):
        lines.append(lm_finetune_limit(task, study))
    return lines


def lm_finetune_limit(task: str, study: Dict[str, Any]) -> str:
    """One line of `final_limits`: dev F1 on task-fine-tuned against shipped LMs."""
    epochs = study["epochs"]
    parts = [
        f"{row['lms']} LMs, seed {row['seed']}: {late_mean(row['dev_f1_by_epoch'], epochs)}"
        for row in study["rows"]
    ]
    return (
        f"{task} dev F1 on LMs fine-tuned on the task's text (lm_finetune_study), mean over "
        f"epochs {epochs // 2 + 1}-{epochs}: " + "; ".join(parts)
    )


def summary(results: Dict[str, Any]) -> Dict[str, Any]:
    """The F1 table of BENCHMARKS.md, from the per-run results."""
    rows = []
    for name, task, baseline, goal in SUMMARY_ROWS:
        run = results.get(name)
        if not run:
            continue
        gain = None
        if baseline and results.get(baseline):
            gain = round(run["test_f1"] - results[baseline]["test_f1"], 2)
        wallclock = run.get("train_wallclock_s")
        rows.append(
            [
                task,
                TAGGERS[name.split("_", 1)[1]],
                run["epochs_trained"],
                round(run["dev_f1"], 2),
                round(run["test_f1"], 2),
                gain,
                goal,
                run.get("flops_per_token"),
                round(wallclock / 60, 1) if wallclock else None,
            ]
        )
    table = {
        "caption": "Test F1 (model picked on dev; goals from issue 13: NER >= 91 with LD-Net "
        "features and >= 90 without, chunking >= 95, LD-Net >= +1.0 over the matched no-LM "
        "tagger; the gain is over the no-LM run with the same word vectors and recipe). Each "
        "run's command is under `<run>.command`.",
        "columns": [
            "task",
            "tagger",
            "epochs",
            "dev F1",
            "test F1",
            "gain over no LM",
            "goal",
            "FLOPs/token",
            "train min",
        ],
        "rows": rows,
    }
    tables = [table]
    final = results.get("final")
    if final:
        tables.insert(0, final_table(final))
    if results.get("lm_passes"):
        tables.append(lm_passes_table(results["lm_passes"]))
    for task, study in sorted(results.get("lm_finetune_study", {}).items()):
        tables.append(lm_finetune_table(task, study))
    search = results.get("recipe_search")
    if not search:
        return tables
    # the recipe search of issue 13: dev F1 only, each run against the config it changes
    search_rows = []
    for baseline in ("ner_vanilla_glove", "ner_ldnet_glove", "chunk_ldnet_glove"):
        if results.get(baseline):
            search_rows.append(
                [
                    f"{baseline} (Adam, the configs' own recipe)",
                    f"training_configs/tagging/{baseline}.jsonnet",
                    results[baseline]["dev_f1_by_epoch"],
                ]
            )
    for name, run in sorted(search.items()):
        search_rows.append([name, run["config"], run["dev_f1_by_epoch"]])
    recipe = {
        "caption": "Recipe search (issue 13), dev F1 per epoch (NER: CoNLL-03 eng.testa; "
        "chunking: every 10th sentence of CoNLL-00 train.txt, held out from training); the test "
        "file is never read by these runs (`--dev-only`). Commands: recipe_search.<run>.command.",
        "columns": ["run", "config", "dev F1 by epoch"],
        "rows": search_rows,
    }
    return tables + [recipe]


def late_mean(dev: List[float], epochs: int) -> Optional[float]:
    """Mean dev F1 over the second half of the first `epochs` epochs (less noisy than one)."""
    late = dev[epochs // 2 : epochs]
    return round(sum(late) / len(late), 2) if len(dev) >= epochs else None


def lm_size(lms: Dict[str, Any]) -> str:
    """`6x128`: an LM pair's dense layers x hidden size (records from before the size study
    have the shipped 6x128)."""
    return f"{lms.get('num_layers', 6)}x{lms.get('hidden_size', 128)}"


def lm_passes_limit(study: Dict[str, Any]) -> str:
    """One line of `final_limits`: dev F1 against LM size and passes at equal epochs."""
    epochs, parts = study["epochs"], []
    for row in study["rows"]:
        lms = row["lms"]
        what = "no LM" if lms is None else f"{lm_size(lms)} LMs, {lms['passes']} passes"
        if lms is not None:
            perplexity = "/".join(
                f"{lms[d]['dev_perplexity']:.0f}" for d in ("forward", "backward")
            )
            what += f" (dev perplexity {perplexity}"
            if lms.get("cpu_hours") is not None:
                what += f", {lms['cpu_hours']} CPU-hours"
            what += ")"
        parts.append(f"{what}: {late_mean(row['dev_f1_by_epoch'], epochs)} ({row['run']})")
    return (
        f"dev F1 against LM size and passes (lm_passes), mean over epochs "
        f"{epochs // 2 + 1}-{epochs}: " + "; ".join(parts)
    )


def lm_passes_table(study: Dict[str, Any]) -> Dict[str, Any]:
    """`lm_passes` (benchmarks/lm_passes_benchmark.py): dev F1 against LM size, passes and
    epochs, with the LMs' training cost."""
    epochs = study["epochs"]
    rows = []
    for row in study["rows"]:
        lms, dev = row["lms"], row["dev_f1_by_epoch"]
        perplexity = None
        if lms:
            perplexity = [lms[d]["dev_perplexity"] for d in ("forward", "backward")]
        seconds = row.get("train_wallclock_s")
        rows.append(
            [
                row["run"],
                "none" if lms is None else lm_size(lms),
                "none" if lms is None else lms["passes"],
                None if lms is None else lms.get("cpu_hours"),
                perplexity,
                dev,
                dev[epochs - 1] if len(dev) >= epochs else None,
                late_mean(dev, epochs),
                seconds and round(seconds / row["epochs_trained"]),
            ]
        )
    return {
        "caption": "Dev F1 (CoNLL-03 eng.testa) against LM size and passes: the final NER recipe "
        "on LMs of the shipped vocabulary and of the shipped size (6 dense layers x 128) or "
        "another, that saw 0 (initialised only) or more passes over the LM corpus, beside the "
        "shipped LMs' taggers and the no-LM taggers over the same first "
        f"{epochs} epochs. LM CPU-hours: both directions' training seconds on this CPU, one "
        "thread each (the shipped LMs trained on a GPU). LM dev perplexity on the LM corpus' "
        "held-out sentences. Tagger s/epoch: its training wall-clock over its epochs (one "
        "thread, beside other jobs; rows trained in different sessions ran on machines of "
        "different speed). Commands: lm_passes.commands and each row's command.",
        "columns": [
            "run",
            "LM size",
            "LM passes",
            "LM CPU-hours",
            "LM dev perplexity (fwd, bwd)",
            "dev F1 by epoch",
            f"dev F1 at epoch {epochs}",
            f"mean dev F1, epochs {epochs // 2 + 1}-{epochs}",
            "tagger s/epoch",
        ],
        "rows": rows,
    }


def lm_finetune_table(task: str, study: Dict[str, Any]) -> Dict[str, Any]:
    """`lm_finetune_study.<task>` (benchmarks/lm_finetune_benchmark.py): the final recipe's dev F1
    on LMs fine-tuned on the task's training text against the shipped LMs, at equal epochs."""
    epochs, lms = study["epochs"], study["lms"]
    perplexity = {
        "fine-tuned": [lms[d]["dev_perplexity_after"] for d in ("forward", "backward")],
        "shipped": [lms[d]["dev_perplexity_before"] for d in ("forward", "backward")],
    }
    rows = [
        [
            row["lms"],
            row["seed"],
            perplexity[row["lms"]],
            row["dev_f1_by_epoch"],
            row["best_dev_f1"],
            late_mean(row["dev_f1_by_epoch"], epochs),
        ]
        for row in study["rows"]
    ]
    data = "CoNLL-03 eng.testa" if task == "ner" else "the held-out tenth of CoNLL-00 train.txt"
    fine_tuning = ", ".join(
        f"{d}: epoch {lms[d]['best_epoch']} of {lms[d]['epochs']} kept, {lms[d]['seconds']} s"
        for d in ("forward", "backward")
    )
    return {
        "caption": f"{task}: {study['tagger']} on the shipped LMs and on the same LMs fine-tuned "
        f"on the task's training text (ELMo's domain transfer; {fine_tuning}), dev F1 ({data}) "
        f"over the same first {epochs} epochs, by seed. LM dev perplexity (fwd, bwd): on the "
        f"task's dev text ({lms['dev_text']}). Commands: lm_finetune_study.{task}.commands and "
        "each row's command.",
        "columns": [
            "LMs",
            "seed",
            "LM dev perplexity (fwd, bwd)",
            "dev F1 by epoch",
            "best dev F1",
            f"mean dev F1, epochs {epochs // 2 + 1}-{epochs}",
        ],
        "rows": rows,
    }


FINAL_GOALS = {
    "conll03_test_f1_ldnet": 91.0,
    "conll03_test_f1_vanilla": 90.0,
    "conll00_test_f1_ldnet": 95.0,
    "conll00_test_f1_vanilla": None,
}


def final_table(final: Dict[str, Any]) -> Dict[str, Any]:
    """Issue 13's headline keys: each run's test F1 per seed and the mean."""
    rows = []
    for key, record in final.items():
        goal = FINAL_GOALS.get(key)
        mean = round(record["mean"], 2)
        rows.append(
            [
                key,
                record["run"],
                record["test_f1_by_seed"],
                mean,
                goal,
                None if goal is None else ("met" if mean >= goal else "missed"),
            ]
        )
    pairs = [("conll03_test_f1_ldnet", "conll03_test_f1_vanilla", 1.0)]
    pairs.append(("conll00_test_f1_ldnet", "conll00_test_f1_vanilla", None))
    for ldnet, vanilla, goal in pairs:
        if ldnet in final and vanilla in final:
            gain = round(final[ldnet]["mean"] - final[vanilla]["mean"], 2)
            verdict = None if goal is None else ("met" if gain >= goal else "missed")
            rows.append([f"{ldnet} - {vanilla}", "gain of LD-Net", None, gain, goal, verdict])
    return {
        "caption": "Issue 13's results: the final runs (chosen on dev, test read once per "
        "model), test F1 per seed ('default' = AllenNLP's seeds, N = --seed N) and their mean, "
        "which is what the key holds.",
        "columns": ["key", "run", "test F1 by seed", "mean", "goal", ""],
        "rows": rows,
    }


def write_results(updates: Updates) -> None:
    """
    Merges `updates` (or what a callable returns for the current results) into tagging.json and
    recomputes the final keys and tables, under a lock: parallel runs lose nothing.
    """
    update_results_file(RESULTS, updates, finish=finish_results)


def finish_results(results: Dict[str, Any]) -> None:
    final = final_results(results)
    if final:
        results["final"] = final
        results.update({key: record["mean"] for key, record in final.items()})
        results["final_limits"] = limits(results)
    results["title"] = "LD-Net tagging: CoNLL-03 NER and CoNLL-00 chunking (issues 4 and 13)"
    results["summary"] = summary(results)
    results["hardware"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores (shared), no GPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", default=list(RUN_SPECS), choices=list(RUN_SPECS))
    parser.add_argument("--epochs", type=int, default=None, help="override trainer.num_epochs")
    parser.add_argument("--forward-lm", default=ROOT / "runs" / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", default=ROOT / "runs" / "lm_backward" / "model.tar.gz")
    parser.add_argument("--threads", type=int, default=1, help="OMP threads per training run")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="AllenNLP's random, numpy and torch seeds (default: AllenNLP's own); the run goes to "
        "runs/tagging/<run>_seed<N> and its results under that key",
    )
    parser.add_argument(
        "--lm-label",
        help="names the LMs given with --forward-lm/--backward-lm in a study of other LMs (with "
        "--dev-only): the run goes to runs/tagging/<run>_lm-<label>, recorded under that key",
    )
    parser.add_argument("--skip-train", action="store_true", help="only evaluate trained runs")
    parser.add_argument(
        "--finalize-partial",
        action="store_true",
        help="archive the best checkpoint (best.th) of runs that were stopped before the end",
    )
    parser.add_argument(
        "--lm-finetune-report", action="store_true", help="also record the LM fine-tuning effect"
    )
    parser.add_argument(
        "--extend",
        action="store_true",
        help="continue a finished run to --epochs (resumed from its last checkpoint)",
    )
    parser.add_argument(
        "--ship",
        action="store_true",
        help="also write <run dir>/model_fp16.tar.gz, the tagger as pretrained/ ships it "
        "(fp16, LMs by reference), and record its test F1 (test_f1_fp16)",
    )
    parser.add_argument("--notes", help="free text for the report (what limited the runs)")
    parser.add_argument(
        "--dev-only",
        action="store_true",
        help="recipe search: record dev F1 per epoch under recipe_search.<run>, never read test",
    )
    args = parser.parse_args()
    if args.lm_label is not None and not args.dev_only:
        # a study's taggers are compared on dev; test F1 stays for the runs the results keys hold
        parser.error("--lm-label needs --dev-only")
    if args.lm_label is not None and not args.lm_label.replace("_", "").isalnum():
        parser.error(f"--lm-label {args.lm_label!r}: use letters, digits and '_'")
    if args.lm_finetune_report:
        write_results({"lm_finetune": lm_finetune_report()})
    if args.notes:
        write_results({"notes": args.notes})
    for name in args.runs:
        key = run_key(name, args.seed, args.lm_label)
        out = RUNS / key
        if (
            args.finalize_partial
            and not (out / "model.tar.gz").exists()
            and (out / "best.th").exists()
        ):
            from allennlp.models.archival import archive_model

            print(f"[{key}] stopped early: archiving its best checkpoint")
            archive_model(str(out))
        elif not args.skip_train:
            train(name, args)
        if args.dev_only or RUN_SPECS[name][3] is None:
            record_dev_only(name, args)
            continue
        if not (out / "model.tar.gz").exists():
            print(f"[{key}] not trained yet; skipped")
            continue
        result = evaluate(name, args)
        if args.ship:
            result.update(ship(name, args))
            result["ship_command"] = "python benchmarks/tagging_benchmark.py " + " ".join(
                sys.argv[1:]
            )
        result["command"] = reproduce_command(name, args.seed, args.lm_label)
        if args.seed is not None:
            result["seed"] = args.seed
        print(f"[{key}] {json.dumps(result)}", flush=True)
        # a run with --seed adds a seed to its run's figures (seed_means); the results key
        # holds the run with AllenNLP's default seeds
        updates = {} if args.seed is not None else {RUN_SPECS[name][3]: result["test_f1"]}
        write_results(
            {
                **updates,
                key: result,
                "command": "python benchmarks/tagging_benchmark.py [--runs ...] [--epochs N]"
                " [--forward-lm ... --backward-lm ...] [--finalize-partial]",
            }
        )


if __name__ == "__main__":
    main()
