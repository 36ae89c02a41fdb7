"""
Scalar-mix "ELMo" (`γ Σ softmax(s)_j h_j`) vs LD-Net's features (`r_t`) vs no LM on CoNLL-03 NER
with the final NER recipe (`CONFIGS`) on the shipped LMs, and the scalar-mix tagger pruned to 2
LM layers. `no_lm` and `ldnet` are the tagging study's runs (`TAGGING_RUNS` in `tagging.json`;
seed 1 = AllenNLP's default seeds, seed 2 = `--seed 2`). Stages: `train` the scalar-mix tagger's
two seeds side by side into `--out`; `prune` the seed better on eng.testa (LD-Net's phase 2,
`PRUNE_CONFIG`, then `ldnet-prune`); `measure` eng.testb F1 of each new archive and words/s of
the five taggers (forward incl. Viterbi, batches of `--batch-size`, `--threads` threads) in one
`interleaved` run, `no_lm` as its untrained architecture (its speed does not depend on the
weights), into `benchmarks/results/scalar_mix.json`.
"""

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL03, ROOT, hardware, read_sentences
from benchmarks.harness.results import command_line, load_results, write_results
from benchmarks.harness.runs import timed_once
from benchmarks.harness.study import Headline, Stage, Study, at_most, headline
from benchmarks.harness.taggers import forward_seconds, model_batches, tensor_batches
from benchmarks.harness.timing import MIN_ROUNDS, interleaved
from benchmarks.studies.tagging import seed_overrides

CONFIGS = {
    "no_lm": "training_configs/tagging/recipe/ner_vanilla_glove_sgd.jsonnet",
    "ldnet": "training_configs/tagging/recipe/ner_ldnet_glove_sgd.jsonnet",
    "scalar_mix": "training_configs/elmo/ner_scalar_mix_glove_sgd.jsonnet",
}
PRUNE_CONFIG = "training_configs/elmo/ner_scalar_mix_glove_sgd_prune.jsonnet"
PHASE1_DIR = "NER_SCALAR_MIX_GLOVE_PHASE1_DIR"  # PRUNE_CONFIG's phase-1 run
# the tagging study's keys (benchmarks/results/tagging.json) of the no-LM and LD-Net runs
TAGGING_RUNS = {"no_lm": "ner_vanilla_glove_sgd", "ldnet": "ner_ldnet_glove_sgd"}
SEEDS = (1, 2)
LMS = {f"{d.upper()}_LM_ARCHIVE": f"pretrained:lm_{d}" for d in ("forward", "backward")}
ENV = {**CONLL03, **LMS}
TITLE = "Scalar-mix ELMo vs LD-Net vs no LM: CoNLL-03 NER, final recipe, shipped LMs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "elmo" / "recipe")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS, help="timed rounds (>= 5)")


def run_name(seed: int) -> str:
    return f"scalar_mix_seed{seed}"


def _train(args: argparse.Namespace, name: str, config: str, overrides=None, env=ENV) -> None:
    """`config` trained into `--out/<name>` on one thread (`timed_once` keeps its seconds)."""
    run, log = args.out / name, args.out / f"{name}.log"
    timed_once(args.out, name, lambda: allennlp.train(config, run, log, overrides, env, threads=1))


def train(args: argparse.Namespace) -> None:
    """The scalar-mix tagger's two seeds side by side, one thread each."""
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = {run_name(seed): seed_overrides(None if seed == 1 else seed) for seed in SEEDS}
    with ThreadPoolExecutor(max_workers=len(SEEDS)) as pool:
        list(pool.map(lambda n: _train(args, n, CONFIGS["scalar_mix"], seeds[n]), seeds))


def best_dev_f1(run: Path) -> float:
    """The run's eng.testa F1 (percent) of the epoch it kept."""
    metrics = json.loads((run / "metrics.json").read_text())
    return 100.0 * metrics["best_validation_f1-measure-overall"]


def phase1_seed(args: argparse.Namespace) -> int:
    """The scalar-mix seed with the better eng.testa F1: the one pruned (chosen on dev)."""
    return max(SEEDS, key=lambda seed: best_dev_f1(args.out / run_name(seed)))


def prune(args: argparse.Namespace) -> None:
    """LD-Net's phase 2 (budget 2) on the better scalar-mix seed, then `ldnet-prune`."""
    phase1 = args.out / run_name(phase1_seed(args))
    _train(args, "scalar_mix_pruned", PRUNE_CONFIG, None, {**ENV, PHASE1_DIR: str(phase1)})
    run = args.out / "scalar_mix_pruned"
    if not (run / "pruned.tar.gz").exists():
        command = ["ldnet-prune", str(run / "model.tar.gz"), "-o", str(run / "pruned.tar.gz")]
        allennlp.run_allennlp(command, args.out / "scalar_mix_pruned.log")


def test_f1(archive: Path, log: Path) -> float:
    """Entity-level eng.testb F1 (percent); an evaluation of this very archive is reused."""
    output = archive.with_name(archive.name.replace(".tar.gz", "_test_metrics.json"))
    test_file = CONLL03["CONLL03_TEST_DATA_PATH"]
    return 100.0 * allennlp.evaluate(archive, test_file, output, log)["f1-measure-overall"]


def words_per_sec(args: argparse.Namespace, archives: Dict[str, Path]) -> Dict[str, float]:
    """Words/s on eng.testb of each archive and of `no_lm`, the no-LM tagger's architecture (its
    config) over the shipped `ner` tagger's vocabulary, untrained: the median of `--repeats`
    interleaved rounds, after one batch of each."""
    import _jsonnet
    import torch
    from allennlp.common import Params
    from allennlp.data import DatasetReader
    from allennlp.models import Model
    from allennlp.models.archival import load_archive

    from ldnet_allennlp.pretrained import resolve_archive

    sentences = read_sentences(CONLL03["CONLL03_TEST_DATA_PATH"])
    config = json.loads(_jsonnet.evaluate_file(str(ROOT / CONFIGS["no_lm"]), ext_vars=ENV))
    vocab = load_archive(resolve_archive("pretrained:ner")).model.vocab
    no_lm = Model.from_params(vocab=vocab, params=Params(config["model"])).eval()
    reader = DatasetReader.from_params(Params(config["dataset_reader"]))
    taggers = {"no_lm": (no_lm, model_batches(no_lm, reader, sentences, args.batch_size))}
    for name, archive in archives.items():
        taggers[name] = tensor_batches(archive, sentences, args.batch_size)
    cases = {name: (lambda m=m, b=b: forward_seconds(m, b)) for name, (m, b) in taggers.items()}
    warmup = {name: (lambda m=m, b=b: m(**b[0])) for name, (m, b) in taggers.items()}
    protocol = dict(warmup=warmup, threads=args.threads, self_timed=True)
    with torch.no_grad():
        timings = interleaved(cases, args.repeats, **protocol)
    words = sum(len(sentence) for sentence in sentences)
    return {name: round(timings.rate(name, words), 1) for name in taggers}


def seed_runs(args: argparse.Namespace, seconds: Dict[str, float], log: Path) -> Dict[str, Any]:
    """Each seed's test and dev F1 and epochs: the tagging study's `no_lm` and `ldnet` runs (as
    `tagging.json` records them), and this study's scalar-mix runs (test F1 evaluated here)."""
    tagging, runs = load_results("tagging"), {}
    for name in TAGGING_RUNS:
        for seed in SEEDS:
            key = TAGGING_RUNS[name] + ("" if seed == 1 else f"_seed{seed}")
            runs[f"{name}_seed{seed}"] = {
                **{figure: round(tagging[key][figure], 2) for figure in ("test_f1", "dev_f1")},
                **{k: tagging[key][k] for k in ("epochs_trained", "best_epoch", "command")},
                "source": f"tagging.json {key}",
            }
    for seed in SEEDS:
        run = args.out / run_name(seed)
        runs[run_name(seed)] = {
            "test_f1": round(test_f1(run / "model.tar.gz", log), 2),
            "dev_f1": round(best_dev_f1(run), 2),
            "epochs_trained": len(list(run.glob("metrics_epoch_*.json"))),
            "best_epoch": json.loads((run / "metrics.json").read_text())["best_epoch"],
            "train_wallclock_s": seconds.get(run_name(seed)),
        }
    return runs


def pruned_run(args: argparse.Namespace, seed: int, seconds: Dict[str, float], log: Path):
    """The scalar-mix tagger pruned from `seed`: its F1 and kept layers."""
    run = args.out / "scalar_mix_pruned"
    if not (run / "pruned.tar.gz").exists():
        raise SystemExit(f"no {run / 'pruned.tar.gz'}: run --stage prune first")
    return {
        "phase1_seed": seed,
        "test_f1": round(test_f1(run / "pruned.tar.gz", log), 2),
        "dev_f1": round(best_dev_f1(run), 2),
        "kept_layers": kept_layers(run / "pruned.tar.gz"),
        "train_wallclock_s": seconds.get("scalar_mix_pruned"),
    }


def measure(args: argparse.Namespace) -> None:
    """F1 of every tagger (test F1 of each new archive read once) and the interleaved words/s;
    replaces scalar_mix.json. Needs the stages train and prune."""
    log, seconds = args.out / "benchmark.log", load_results(args.out / "stage_seconds.json")
    stages = [f"python -m benchmarks scalar_mix --stage {stage}" for stage in ("train", "prune")]
    seed = phase1_seed(args)  # the scalar-mix seed chosen on dev, pruned to 2 LM layers
    result: Dict[str, Any] = {
        "title": TITLE,
        "command": command_line(),
        # what made the runs measured here (the tagging study's runs: each seed's "command")
        "commands": stages + [command_line()],
        "hardware": hardware(args.threads),
        "configs": dict(CONFIGS, scalar_mix_pruned=PRUNE_CONFIG),
        "lm_archives": list(LMS.values()),
        "scalar_mix_pruned": pruned_run(args, seed, seconds, log),  # stops if not pruned yet
        "seeds": seed_runs(args, seconds, log),
    }
    for name in CONFIGS:
        for figure in ("test_f1", "dev_f1"):
            values = [result["seeds"][f"{name}_seed{seed}"][figure] for seed in SEEDS]
            result[f"conll03_{figure}_{name}"] = round(sum(values) / len(values), 2)
    f1 = {name: result[f"conll03_test_f1_{name}"] for name in CONFIGS}
    result["test_f1_gap_ldnet_minus_scalar_mix"] = round(f1["ldnet"] - f1["scalar_mix"], 2)
    # the pruned scalar mix beside the shipped LD-Net pair
    manifest = json.loads((ROOT / "pretrained" / "MANIFEST.json").read_text())
    shipped = manifest["ner_pruned"]
    loss = shipped["test_f1_unpruned"] - shipped["test_f1_fp32"]
    result["conll03_f1_loss_ldnet_pruned"] = round(loss, 2)
    loss = result["seeds"][run_name(seed)]["test_f1"] - result["scalar_mix_pruned"]["test_f1"]
    result["conll03_f1_loss_scalar_mix_pruned"] = round(loss, 2)
    archives = {
        "ldnet": ROOT / "pretrained" / manifest["ner"]["file"],
        "ldnet_pruned": ROOT / "pretrained" / shipped["file"],
        "scalar_mix": args.out / run_name(seed) / "model.tar.gz",
        "scalar_mix_pruned": args.out / "scalar_mix_pruned" / "pruned.tar.gz",
    }
    speeds = words_per_sec(args, archives)
    result.update({f"words_per_sec_{name}": value for name, value in speeds.items()})
    for name in ("ldnet", "scalar_mix"):
        result[f"speedup_{name}_pruned"] = round(speeds[f"{name}_pruned"] / speeds[name], 2)
    result["speed_setup"] = (
        f"model forward incl. CRF Viterbi, no_grad, {args.threads} torch thread(s), batch "
        f"{args.batch_size}, all eng.testb sentences tensorized beforehand, median of "
        f"{args.repeats} interleaved rounds; ldnet = the shipped ner (seed 1), ldnet_pruned = "
        f"the shipped ner_pruned, scalar_mix = seed {seed}, no_lm = its architecture untrained"
    )
    write_results("scalar_mix", result, replace=True)
    print(json.dumps(result, indent=2))


def kept_layers(archive: Path) -> Dict[str, List[int]]:
    """The LM layers a (pruned) tagger archive runs, per direction."""
    from allennlp.models.archival import load_archive

    from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms

    ((_, bilm),) = find_dense_bilms(load_archive(str(archive)).model)
    return {direction: list(kept) for direction, kept in bilm.kept_layers.items()}


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The goals: scalar mix within 0.5 test F1 of LD-Net's features, pruning loss <= 0.3; and
    the words/s of the two."""
    lines = [headline(results, f"{n}: test F1, 2 seeds", f"conll03_test_f1_{n}") for n in CONFIGS]
    gap_key, loss_key = "test_f1_gap_ldnet_minus_scalar_mix", "conll03_f1_loss_scalar_mix_pruned"
    lines.append(headline(results, "ldnet - scalar_mix, test F1", gap_key, *at_most(0.5)))
    figure = "scalar_mix pruned to 2 layers: test F1 loss"
    lines.append(headline(results, figure, loss_key, *at_most(0.3)))
    figure = "ldnet pruned (ner_pruned): test F1 loss"
    lines.append(headline(results, figure, "conll03_f1_loss_ldnet_pruned"))
    lines += [
        headline(results, f"{n}: words/s", f"words_per_sec_{n}") for n in ("ldnet", "scalar_mix")
    ]
    lines.append(headline(results, "scalar_mix pruned: speed-up", "speedup_scalar_mix_pruned"))
    return lines


STUDY = Study(
    name="scalar_mix",
    description="Scalar mix vs LD-Net's r_t vs no LM, CoNLL-03 NER, final recipe; the scalar mix "
    "pruned to 2 LM layers.",
    results_file="scalar_mix.json",
    stages=[
        Stage("train", train, "the scalar-mix tagger, seeds 1 and 2, side by side"),
        Stage("prune", prune, "phase 2 (budget 2) on the seed best on dev, then ldnet-prune"),
        Stage("measure", measure, "test and dev F1, words/s; writes scalar_mix.json"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
