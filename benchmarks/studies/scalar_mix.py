"""
Scalar-mix "ELMo" vs LD-Net vs no LM on CoNLL-03 NER at an equal budget (issue 6); writes
`benchmarks/results/scalar_mix.json`.

    python -m benchmarks scalar_mix --epochs 1                  # train + score
    python -m benchmarks scalar_mix --epochs 1 --speed-only     # rescore (= --stage measure)

The three taggers differ only in their contextual features, everything else is
`training_configs/tagging/ner_ldnet.jsonnet` (char CNN, 100-d words from scratch, BiLSTM 150,
CRF, Adam, batch 32, dropout 0.5):

  vanilla     training_configs/tagging/ner_vanilla.jsonnet            (no LM)
  ldnet       training_configs/tagging/ner_ldnet.jsonnet               (layer_selection, r_t)
  scalar_mix  training_configs/elmo/ner_ldnet_shape_scalar_mix.jsonnet (dense_lm_scalar_mix)

Same budget (stage `train`): each is trained for exactly `--epochs` epochs on eng.train (model
selection on eng.testa) with the same frozen LM archives (`--forward-lm`, `--backward-lm`), into
`runs/elmo/equal_budget/epochs_<N>/<name>/`, the three side by side with one thread each; a run
that was interrupted is resumed with `--recover`, and each training's wall-clock is kept beside
the runs (`harness.runs.timed_once`).

Stage `measure`: test F1 by `allennlp evaluate` of each archive on eng.testb (entity-level span
F1, percent), and words/s: each archive's `forward` (LM features, BiLSTM, CRF Viterbi; no
gradients) on all eng.testb sentences in batches of `--batch-size`, indexed and tensorized before
timing, with `--threads` torch threads, the three taggers timed by `harness.timing.interleaved`
(a warm-up batch each, then `--repeats` rounds; the median round is reported).
"""

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL03, ROOT, hardware, read_sentences
from benchmarks.harness.results import command_line, save_results
from benchmarks.harness.runs import timed_once
from benchmarks.harness.study import Headline, Stage, Study, headline
from benchmarks.harness.taggers import forward_seconds, tensor_batches
from benchmarks.harness.timing import MIN_ROUNDS, interleaved

RUNS = ROOT / "runs"
TAGGERS = {
    "vanilla": "training_configs/tagging/ner_vanilla.jsonnet",
    "ldnet": "training_configs/tagging/ner_ldnet.jsonnet",
    "scalar_mix": "training_configs/elmo/ner_ldnet_shape_scalar_mix.jsonnet",
}
TITLE = "Scalar-mix ELMo vs LD-Net vs no LM: CoNLL-03 NER, equal budget (issue 6)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epochs", type=int, default=1, help="the budget, for every tagger")
    parser.add_argument("--forward-lm", type=Path, default=RUNS / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", type=Path, default=RUNS / "lm_backward" / "model.tar.gz")
    parser.add_argument("--out", type=Path, default=RUNS / "elmo" / "equal_budget")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS, help="timed rounds (>= 5)")
    parser.add_argument("--speed-only", action="store_true", help="no training (archives exist)")


def run_dir(args: argparse.Namespace) -> Path:
    out: Path = args.out / f"epochs_{args.epochs}"
    out.mkdir(parents=True, exist_ok=True)
    return out


def train(args: argparse.Namespace) -> None:
    """The three taggers side by side, one thread each (on 2 shared cores this is faster than
    one after the other with 2 threads each), each its own `allennlp train`."""
    if args.speed_only:
        return
    for lm in (args.forward_lm, args.backward_lm):
        if not lm.exists():
            raise SystemExit(
                f"{lm} is missing: train the LMs first (python -m benchmarks lm --stage pretrain)"
            )
    out = run_dir(args)
    env = {
        **CONLL03,
        "FORWARD_LM_ARCHIVE": str(args.forward_lm),
        "BACKWARD_LM_ARCHIVE": str(args.backward_lm),
    }
    overrides = {"trainer.num_epochs": args.epochs, "trainer.patience": args.epochs}

    def train_one(name: str) -> None:
        def work() -> bool:
            log = out / f"{name}.log"
            return allennlp.train(TAGGERS[name], out / name, log, overrides, env, threads=1)

        timed_once(out, name, work)

    with ThreadPoolExecutor(max_workers=len(TAGGERS)) as pool:
        list(pool.map(train_one, TAGGERS))


def epochs_trained(run: Path) -> int:
    return len(list(run.glob("metrics_epoch_*.json")))


def test_f1(archive: Path, log: Path) -> float:
    """Entity-level test F1 (percent); an evaluation of this very archive is reused."""
    output = archive.with_name("test_metrics_eng.testb.json")
    test_file = CONLL03["CONLL03_TEST_DATA_PATH"]
    return 100.0 * allennlp.evaluate(archive, test_file, output, log)["f1-measure-overall"]


def words_per_sec(archives: Dict[str, Path], args: argparse.Namespace) -> Dict[str, float]:
    """Each tagger's words/s on eng.testb: the median of `--repeats` interleaved rounds."""
    import torch

    sentences = read_sentences(CONLL03["CONLL03_TEST_DATA_PATH"])
    words = sum(len(sentence) for sentence in sentences)
    taggers = {n: tensor_batches(a, sentences, args.batch_size) for n, a in archives.items()}
    with torch.no_grad():
        timings = interleaved(
            {
                name: (lambda m=model, b=batches: forward_seconds(m, b))
                for name, (model, batches) in taggers.items()
            },
            rounds=args.repeats,
            warmup={
                name: (lambda m=model, b=batches: m(**b[0]))
                for name, (model, batches) in taggers.items()
            },
            threads=args.threads,
            self_timed=True,
        )
    return {name: timings.rate(name, words) for name in taggers}


def measure(args: argparse.Namespace) -> None:
    """Test and dev F1 and words/s of the three taggers; replaces scalar_mix.json."""
    out = run_dir(args)
    log = out / "benchmark.log"
    result: Dict[str, Any] = {
        "title": TITLE,
        "command": command_line(),
        "hardware": hardware(args.threads),
        "epochs_each": args.epochs,
        "lm_archives": [str(args.forward_lm), str(args.backward_lm)],
        "configs": TAGGERS,
    }
    recorded = out / "stage_seconds.json"
    seconds = json.loads(recorded.read_text()) if recorded.exists() else {}
    result.update({f"train_wallclock_s_{n}": s for n, s in seconds.items() if n in TAGGERS})
    archives = {name: out / name / "model.tar.gz" for name in TAGGERS}
    for name, archive in archives.items():
        if not archive.exists():
            raise SystemExit(f"{archive} is missing: run the train stage (without --speed-only)")
        if epochs_trained(archive.parent) != args.epochs:
            raise SystemExit(
                f"{archive.parent} trained {epochs_trained(archive.parent)} epochs, "
                f"not --epochs {args.epochs}"
            )
        result[f"conll03_test_f1_{name}"] = round(test_f1(archive, log), 2)
        metrics = json.loads((archive.parent / "metrics.json").read_text())
        dev = metrics["best_validation_f1-measure-overall"]
        result[f"conll03_dev_f1_{name}"] = round(100 * dev, 2)
    for name, value in words_per_sec(archives, args).items():
        result[f"words_per_sec_{name}"] = round(value, 1)
    result["speed_setup"] = (
        f"model forward incl. CRF Viterbi, no_grad, {args.threads} torch thread(s), batch "
        f"{args.batch_size}, all eng.testb sentences tensorized beforehand, median of "
        f"{args.repeats} interleaved rounds"
    )
    result["summary"] = table(result)
    save_results("scalar_mix", result)
    print(json.dumps(result, indent=2))


def table(result: Dict[str, Any]) -> Dict[str, Any]:
    """The file's summary table: per tagger its config, epochs, test and dev F1, words/s."""
    rows = [
        [
            name,
            result["configs"][name],
            result["epochs_each"],
            result[f"conll03_test_f1_{name}"],
            result[f"conll03_dev_f1_{name}"],
            result[f"words_per_sec_{name}"],
        ]
        for name in TAGGERS
    ]
    return {"columns": ["tagger", "config", "epochs", "test F1", "dev F1", "words/s"], "rows": rows}


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Test F1 and words/s (one thread) of the three taggers at the same epochs."""
    epochs = results["epochs_each"]
    lines = []
    for name in TAGGERS:
        figure = f"{name}: CoNLL-03 test F1 after {epochs} epoch(s)"
        lines.append(headline(results, figure, f"conll03_test_f1_{name}"))
    for name in TAGGERS:
        lines.append(headline(results, f"{name}: words/s", f"words_per_sec_{name}"))
    return lines


STUDY = Study(
    name="scalar_mix",
    description="Scalar-mix ELMo vs LD-Net vs no LM on CoNLL-03 NER at an equal epoch budget: "
    "test F1 and words/s.",
    results_file="scalar_mix.json",
    stages=[
        Stage("train", train, "the three taggers for --epochs epochs (not with --speed-only)"),
        Stage("measure", measure, "test and dev F1, words/s; writes scalar_mix.json"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
