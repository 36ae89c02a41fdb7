"""
LD-Net tagging on real data: the no-LM and LD-Net taggers on CoNLL-03 NER and CoNLL-00 chunking,
trained into `runs/tagging/<run>/`, scored with `allennlp evaluate`, FLOPs per token counted;
writes benchmarks/results/tagging.json (its derived keys: `tagging_results`).

    python -m benchmarks tagging                                 # every run
    python -m benchmarks tagging --runs ner_vanilla chunk_vanilla --epochs 8
    python -m benchmarks tagging --runs ner_ldnet \\
        --forward-lm runs/lm_forward/model.tar.gz --backward-lm runs/lm_backward/model.tar.gz
    python -m benchmarks tagging --stage record --runs ner_ldnet   # = --skip-train

Stage `train` trains each of `--runs` (a finished run is skipped, an interrupted one resumed with
`--recover`, so a resumed run keeps the `--epochs` it was started with). `train_wallclock_s` is
AllenNLP's own clock summed over a run's training processes (`harness.allennlp.training_seconds`).
Stage `record` scores each run and merges its figures into tagging.json under a lock, so
invocations may run side by side; with `--dev-only` (the recipe search, or `--lm-label`: a study
of other LMs, see `lm_passes` and `lm_finetune`) it records dev F1 per epoch, never test.

`*_lm_init` runs take their word embeddings from the forward LM (exported once with `allennlp
ldnet-export-word-vectors --lowercase`); `*_glove` runs add GloVe 6B 50d. Keys (F1 in percent):
conll0{3,0}_test_f1_{ldnet,vanilla}, the mean over seeds of the final runs (`tagging_results`),
and per run `<run>.{test_f1, dev_f1, epochs_trained, best_epoch, train_wallclock_s,
flops_per_token}`.
"""

import argparse
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.harness import allennlp
from benchmarks.harness.allennlp import epoch_metrics, training_seconds
from benchmarks.harness.data import CONLL00, CONLL03, ROOT, hardware
from benchmarks.harness.results import command_line
from benchmarks.harness.runs import trained
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline, lookup
from benchmarks.studies.tagging_results import (
    FINAL,
    TASK_NAMES,
    run_key,
    table_index,
    write_results,
)

RUNS = ROOT / "runs" / "tagging"
DATA = {"ner": CONLL03, "chunk": CONLL00}
TEST = {"ner": CONLL03["CONLL03_TEST_DATA_PATH"], "chunk": CONLL00["CONLL00_TEST_DATA_PATH"]}
COMMAND = (
    "python -m benchmarks tagging [--runs ...] [--epochs N] [--forward-lm ... --backward-lm ...]"
)
# The runs, in training order. *_lm_init: words initialised from the forward LM's embeddings;
# *_glove: GloVe 6B 50d (frozen, whole index) added to the words. The recipe search's configs are
# under training_configs/tagging/recipe/; its DEV_ONLY runs have no test F1 (--dev-only only).
RUN_NAMES = (
    "ner_vanilla ner_ldnet ner_ldnet_lm_init ner_vanilla_lm_init ner_ldnet_glove ner_vanilla_glove "
    "chunk_vanilla_glove chunk_ldnet_glove chunk_vanilla chunk_ldnet chunk_ldnet_lm_init "
    "ner_vanilla_glove_min2 ner_vanilla_glove_nowords ner_vanilla_glove_sgd ner_ldnet_glove_sgd "
    "chunk_ldnet_glove_sgd chunk_vanilla_glove_sgd ner_vanilla_glove_char_lstm"
).split()
RECIPE_START = RUN_NAMES.index("ner_vanilla_glove_min2")
DEV_ONLY = {"ner_vanilla_glove_min2", "ner_vanilla_glove_nowords", "ner_vanilla_glove_char_lstm"}
CORPUS = {"ner": "conll03", "chunk": "conll00"}


def config_name(name: str) -> str:
    """The run's config under training_configs/tagging (the recipe search's under recipe/)."""
    return f"recipe/{name}" if RUN_NAMES.index(name) >= RECIPE_START else name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    lms = ROOT / "runs"

    def flag(name: str, text: str) -> None:
        parser.add_argument(name, action="store_true", help=text)

    parser.add_argument("--runs", nargs="+", default=RUN_NAMES, choices=RUN_NAMES)
    parser.add_argument("--epochs", type=int, default=None, help="override trainer.num_epochs")
    parser.add_argument("--forward-lm", default=lms / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", default=lms / "lm_backward" / "model.tar.gz")
    parser.add_argument("--threads", type=int, default=1, help="OMP threads per training run")
    seed = "AllenNLP's random, numpy and torch seeds (default: AllenNLP's own); the run and its "
    parser.add_argument("--seed", type=int, help=seed + "key: <run>_seed<N>")
    label = "the LMs of --forward-lm/--backward-lm in a study of other LMs (implies --dev-only)"
    parser.add_argument(
        "--lm-label", type=lm_label, help=f"{label}; the run and its key: <run>_lm-<label>"
    )
    flag("--skip-train", "only evaluate trained runs (= --stage record)")
    ship = "also write <run dir>/model_fp16.tar.gz as pretrained/ ships it (fp16, LMs by name)"
    flag("--ship", f"{ship} and record its test F1 (test_f1_fp16)")
    flag("--dev-only", "record dev F1 per epoch (recipe_search.<run>), never read test")


def lm_label(label: str) -> str:
    """An `--lm-label`: a plain name (it names a folder and a key)."""
    if not label.replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"{label!r}: use letters, digits and '_'")
    return label


def run_dir(name: str, args: argparse.Namespace) -> Tuple[str, Path]:
    """The run's key (`run_key`) and its folder under runs/tagging/."""
    key = run_key(name, args.seed, args.lm_label)
    return key, RUNS / key


def train(args: argparse.Namespace) -> None:
    """Each of `--runs` trained (unless `--skip-train`)."""
    for name in [] if args.skip_train else args.runs:
        train_run(name, args)


def record(args: argparse.Namespace) -> None:
    """Each of `--runs` scored and merged into tagging.json (dev F1 only with `--dev-only` or
    `--lm-label`: a study's taggers are compared on dev; test F1 stays for the runs the results
    keys hold)."""
    for name in args.runs:
        key, out = run_dir(name, args)
        if args.dev_only or args.lm_label is not None or name in DEV_ONLY:
            result = training_record(key)
            result["config"] = f"training_configs/tagging/{config_name(name)}.jsonnet"
            result["best_dev_f1"] = max(result["dev_f1_by_epoch"], default=None)
            result["command"] = reproduce_command(name, args.seed, args.lm_label) + " --dev-only"
            print(f"[{key}] {json.dumps(result)}", flush=True)
            # runs on other LMs (--lm-label) are a study of the LMs, not a recipe choice
            section = "recipe_search" if args.lm_label is None else "lm_study"
            write_results(lambda current: {section: {**current.get(section, {}), key: result}})
        elif not (out / "model.tar.gz").exists():
            print(f"[{key}] not trained yet; skipped")
        else:
            record_test(name, key, args)


def record_test(name: str, key: str, args: argparse.Namespace) -> None:
    """A run's test F1 and its record (a `--seed` run adds a seed to its run's mean, `final`)."""
    result = {**training_record(key), **evaluate(name, args)}
    result["command"] = reproduce_command(name, args.seed, args.lm_label)
    if args.seed is not None:
        result["seed"] = args.seed
    print(f"[{key}] {json.dumps(result)}", flush=True)
    write_results({key: result, "command": COMMAND, "hardware": hardware()})


def run_env(name: str, args: argparse.Namespace) -> Dict[str, str]:
    """The variables the run's config reads: its data, the LMs, the LM's word vectors."""
    return {
        **DATA[name.split("_")[0]],
        "FORWARD_LM_ARCHIVE": str(args.forward_lm),
        "BACKWARD_LM_ARCHIVE": str(args.backward_lm),
        "LM_WORD_VECTORS": str(word_vectors_file(args)),
    }


def word_vectors_file(args: argparse.Namespace) -> Path:
    """The forward LM's word embeddings as GloVe-format text, lowercased (*_lm_init)."""
    return RUNS / f"lm_word_vectors_lower_{Path(args.forward_lm).parent.name}.txt"


def seed_overrides(seed: Optional[int]) -> Dict[str, int]:
    """`--seed N` sets AllenNLP's three seeds (random, numpy, torch) to N."""
    return {} if seed is None else {"random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed}


def train_run(name: str, args: argparse.Namespace) -> None:
    """Trains (or resumes) the run."""
    key, out = run_dir(name, args)
    log = RUNS / f"{key}.train.log"
    if trained(out):
        print(f"[{key}] already trained: {out / 'model.tar.gz'}")
        return
    overrides = {"trainer.num_epochs": args.epochs} if args.epochs else {}
    overrides.update(seed_overrides(args.seed))
    RUNS.mkdir(parents=True, exist_ok=True)
    vectors = word_vectors_file(args)
    if name.endswith("_lm_init") and not vectors.exists():
        export = ["ldnet-export-word-vectors", str(args.forward_lm), str(vectors), "--lowercase"]
        allennlp.run_allennlp(export, log)
    config = ROOT / "training_configs" / "tagging" / f"{config_name(name)}.jsonnet"
    print(f"[{key}] allennlp train {config} -s {out}  (log: {log})", flush=True)
    allennlp.train(config, out, log, overrides, run_env(name, args), threads=args.threads)


def test_f1(name: str, args: argparse.Namespace, archive: Path, output: Path) -> float:
    """Test F1 (percent) of `archive`; the test file is read once per archive."""
    log, test = RUNS / f"{run_dir(name, args)[0]}.train.log", TEST[name.split("_")[0]]
    env = run_env(name, args)
    metrics = allennlp.evaluate(archive, test, output, log, env=env, threads=args.threads)
    return 100.0 * metrics["f1-measure-overall"]


def dev_f1s(out: Path) -> List[float]:
    """The run's dev F1 per epoch (a fraction)."""
    return [m.get("validation_f1-measure-overall", 0.0) for m in epoch_metrics(out)]


def training_record(key: str) -> Dict[str, Any]:
    """What the run's folder says of its training: dev F1 (percent) per epoch, the epochs,
    whether it finished, and its wall-clock."""
    dev = dev_f1s(RUNS / key)
    return {
        "dev_f1_by_epoch": [round(100.0 * f1, 2) for f1 in dev],
        "epochs_trained": len(dev),
        # false: stopped before its last epoch (its best epoch may be archived all the same)
        "completed": (RUNS / key / "metrics.json").exists(),
        "train_wallclock_s": training_seconds(RUNS / key),
    }


def evaluate(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """The run's test F1, its best dev F1 and epoch, FLOPs per token, and with `--ship` its
    shipped archive's test F1."""
    out = run_dir(name, args)[1]
    archive = out / "model.tar.gz"
    dev = dev_f1s(out)
    best_epoch = max(range(len(dev)), key=dev.__getitem__)
    result = {
        "test_f1": test_f1(name, args, archive, out / "test_metrics.json"),
        "dev_f1": 100.0 * dev[best_epoch],
        "best_epoch": best_epoch,
    }
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401
    from ldnet_allennlp.tagging.flops import flops_breakdown, flops_per_token

    model = load_archive(str(archive)).model
    result["flops_per_token"] = float(flops_per_token(model))
    result["flops_breakdown"] = {k: float(v) for k, v in flops_breakdown(model).items()}
    if args.ship:
        result.update(ship(name, args), ship_command=command_line())
    return result


def ship(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """The run's tagger as `pretrained/` ships it (`allennlp ldnet-prune --keep-all-layers --fp16
    --reference-lms`: all layers, fp16 weights, the frozen LMs by reference) in
    `<run dir>/model_fp16.tar.gz`, and its test F1 (a check that fp16 costs nothing)."""
    key, out = run_dir(name, args)
    archive, shipped = out / "model.tar.gz", out / "model_fp16.tar.gz"
    if not shipped.exists() or shipped.stat().st_mtime < archive.stat().st_mtime:
        prune = ["ldnet-prune", str(archive), "-o", str(shipped), "--keep-all-layers"]
        prune += ["--fp16", "--reference-lms"]
        log = RUNS / f"{key}.train.log"
        allennlp.run_allennlp(prune, log, run_env(name, args), threads=args.threads)
    return {
        "test_f1_fp16": test_f1(name, args, shipped, out / "test_metrics_fp16.json"),
        "fp16_archive": os.path.relpath(shipped, ROOT),
        "fp16_archive_bytes": shipped.stat().st_size,
    }


def reproduce_command(name: str, seed: Optional[int] = None, lm_label: Optional[str] = None) -> str:
    """The command that trains `name` as it was trained: epochs and LMs read from its config;
    an LM inside the project is named relative to its root (commands run from there)."""
    config = json.loads((RUNS / run_key(name, seed, lm_label) / "config.json").read_text())
    command = f"python -m benchmarks tagging --runs {name}"
    command += f" --epochs {config['trainer']['num_epochs']}"
    command += "" if seed is None else f" --seed {seed}"
    command += "" if lm_label is None else f" --lm-label {lm_label}"
    lm = config["model"]["text_field_embedder"]["token_embedders"].get("lm")
    for direction in ("forward", "backward") if lm else ():
        path = lm[f"{direction}_lm_archive"]
        if os.path.isabs(path) and Path(path).is_relative_to(ROOT):
            path = os.path.relpath(path, ROOT)
        command += f" --{direction}-lm {path}"
    return command


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The final test F1s (the mean over seeds) against their goals, and LD-Net's gain over the
    no-LM tagger, read from the `final` table's rows."""
    lines, task_names = [], {CORPUS[task]: name for task, name in TASK_NAMES.items()}
    for key, (_, goal) in FINAL.items():
        corpus, tagger = key.split("_test_f1_")
        figure = f"{task_names[corpus]} test F1, {'LD-Net' if tagger == 'ldnet' else 'no LM'}"
        figure += f" (mean of {lookup(results, f'final.{key}.seeds')} seeds)"
        lines.append(headline(results, figure, key, *(at_least(goal) if goal else ())))
    index = table_index(results, "The final runs")
    for row_index, row in enumerate(results["summary"][index]["rows"]):
        if row[1] == "gain of LD-Net":
            figure = f"{task_names[row[0][:7]]} test F1, LD-Net's gain over no LM"
            goal = None if row[4] is None else f">= +{row[4]:g}"
            met = None if row[5] is None else row[5] == "met"
            where = f"summary[{index}].rows[{row_index}][3]"
            lines.append(headline(results, figure, where, goal, met))
    return lines


STUDY = Study(
    name="tagging",
    description="LD-Net and no-LM taggers on CoNLL-03 NER and CoNLL-00 chunking: training, "
    "test F1 (mean over seeds), FLOPs/token.",
    results_file="tagging.json",
    stages=[
        Stage("train", train, "train or resume each of --runs (not with --skip-train)"),
        Stage("record", record, "test F1 (or, --dev-only, dev F1) of each run into tagging.json"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
