"""
Scalar-mix "ELMo" vs LD-Net vs no LM on CoNLL-03 NER at an equal budget (issue 6), one script,
one run; writes `benchmarks/results/scalar_mix.json`.

    .venv/bin/python benchmarks/scalar_mix_benchmark.py --epochs 1          # train + score
    .venv/bin/python benchmarks/scalar_mix_benchmark.py --epochs 1 --speed-only  # rescore

The three taggers differ only in their contextual features, everything else is
`training_configs/tagging/ner_ldnet.jsonnet` (char CNN, 100-d words from scratch, BiLSTM 150,
CRF, Adam, batch 32, dropout 0.5):

  vanilla     training_configs/tagging/ner_vanilla.jsonnet            (no LM)
  ldnet       training_configs/tagging/ner_ldnet.jsonnet               (layer_selection, r_t)
  scalar_mix  training_configs/elmo/ner_ldnet_shape_scalar_mix.jsonnet (dense_lm_scalar_mix)

Same budget: each is trained for exactly `--epochs` epochs on eng.train (model selection on
eng.testa) with the same frozen LM archives (`--forward-lm`, `--backward-lm`), into
`runs/elmo/equal_budget/epochs_<N>/<name>/`, the three side by side with one thread each; a run
that was interrupted is resumed with `--recover`.

Test F1: `allennlp evaluate` of each archive on eng.testb (entity-level span F1, percent).
Words/s: each archive's `forward` (LM features, BiLSTM, CRF Viterbi; no gradients) on all
eng.testb sentences in batches of `--batch-size`, indexed and tensorized before timing, with
`--threads` torch threads; the three taggers are timed interleaved for `--repeats` rounds in this
process and the median round is reported, so machine noise hits all of them alike.
"""

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import CONLL03, ROOT, hardware, run_allennlp, save_results  # noqa: E402

RUNS = ROOT / "runs"
TAGGERS = {
    "vanilla": "training_configs/tagging/ner_vanilla.jsonnet",
    "ldnet": "training_configs/tagging/ner_ldnet.jsonnet",
    "scalar_mix": "training_configs/elmo/ner_ldnet_shape_scalar_mix.jsonnet",
}


def train(name: str, run_dir: Path, epochs: int, env: Dict[str, str], log: Path) -> float:
    """Trains (or resumes) one tagger for exactly `epochs` epochs; returns wall-clock seconds."""
    if (run_dir / "model.tar.gz").exists():
        return 0.0
    command = ["train", TAGGERS[name], "-s", str(run_dir)]
    command += ["-o", json.dumps({"trainer.num_epochs": epochs, "trainer.patience": epochs})]
    if run_dir.exists():
        command.append("--recover")
    start = time.time()
    run_allennlp(command, log, env, threads=1)
    return time.time() - start


def test_f1(archive: Path, log: Path) -> float:
    output = archive.with_name("test_metrics_eng.testb.json")
    test_file = CONLL03["CONLL03_TEST_DATA_PATH"]
    # an evaluation of this very archive is reused (a rerun, e.g. --speed-only, scores it again
    # only if the archive is newer)
    if not (output.exists() and output.stat().st_mtime >= archive.stat().st_mtime):
        run_allennlp(["evaluate", str(archive), test_file, "--output-file", str(output)], log)
    return 100.0 * json.loads(output.read_text())["f1-measure-overall"]


def tensor_batches(archive: Path, batch_size: int):
    """The model and its untagged eng.testb batches, built before any timing."""
    from allennlp.data import Batch, Token
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401  (registers our readers and models for load_archive)

    loaded = load_archive(str(archive))
    model, reader = loaded.model.eval(), loaded.validation_dataset_reader
    sentences = [
        [Token(token.text) for token in instance["tokens"]]
        for instance in reader.read(CONLL03["CONLL03_TEST_DATA_PATH"])
    ]
    instances = []
    for sentence in sentences:
        instance = reader.text_to_instance(sentence)
        reader.apply_token_indexers(instance)
        instances.append(instance)
    batches = []
    for start in range(0, len(instances), batch_size):
        batch = Batch(instances[start : start + batch_size])
        batch.index_instances(model.vocab)
        batches.append(batch.as_tensor_dict())
    return model, batches, sum(len(sentence) for sentence in sentences)


def words_per_sec(archives: Dict[str, Path], batch_size: int, repeats: int) -> Dict[str, float]:
    contenders = {name: tensor_batches(archive, batch_size) for name, archive in archives.items()}
    seconds: Dict[str, List[float]] = {name: [] for name in contenders}
    with torch.no_grad():
        for model, batches, _ in contenders.values():
            model(**batches[0])  # warm-up
        for _ in range(repeats):
            for name, (model, batches, _) in contenders.items():
                start = time.perf_counter()
                for tensors in batches:
                    model(**tensors)
                seconds[name].append(time.perf_counter() - start)
    return {
        name: words / statistics.median(seconds[name]) for name, (_, _, words) in contenders.items()
    }


def epochs_trained(run_dir: Path) -> int:
    return len(list(run_dir.glob("metrics_epoch_*.json")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1, help="the budget, for every tagger")
    parser.add_argument("--forward-lm", type=Path, default=RUNS / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", type=Path, default=RUNS / "lm_backward" / "model.tar.gz")
    parser.add_argument("--out", type=Path, default=RUNS / "elmo" / "equal_budget")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--speed-only", action="store_true", help="no training (archives exist)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # the speed measurement's; training is a subprocess

    out: Path = args.out / f"epochs_{args.epochs}"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "benchmark.log"
    for lm in (args.forward_lm, args.backward_lm):
        if not lm.exists():
            raise SystemExit(
                f"{lm} is missing: train the LMs first (python -m benchmarks lm --stage pretrain)"
            )
    env = {
        **CONLL03,
        "FORWARD_LM_ARCHIVE": str(args.forward_lm),
        "BACKWARD_LM_ARCHIVE": str(args.backward_lm),
    }
    result: Dict[str, Any] = {
        "title": "Scalar-mix ELMo vs LD-Net vs no LM: CoNLL-03 NER, equal budget (issue 6)",
        "command": "python benchmarks/scalar_mix_benchmark.py " + " ".join(sys.argv[1:]),
        "hardware": hardware(),
        "epochs_each": args.epochs,
        "lm_archives": [str(args.forward_lm), str(args.backward_lm)],
        "configs": TAGGERS,
    }
    archives = {name: out / name / "model.tar.gz" for name in TAGGERS}
    if not args.speed_only:
        # the three trainings run side by side, one thread each (on 2 shared cores this is
        # faster than one after the other with 2 threads each); each is its own subprocess
        with ThreadPoolExecutor(max_workers=len(TAGGERS)) as pool:
            seconds = dict(
                zip(
                    TAGGERS,
                    pool.map(
                        lambda name: train(name, out / name, args.epochs, env, out / f"{name}.log"),
                        TAGGERS,
                    ),
                )
            )
        for name, value in seconds.items():
            if value:
                result[f"train_wallclock_s_{name}"] = round(value, 1)
    for name, archive in archives.items():
        run_dir = archive.parent
        if not archive.exists():
            raise SystemExit(f"{archive} is missing: run without --speed-only")
        if epochs_trained(run_dir) != args.epochs:
            raise SystemExit(
                f"{run_dir} trained {epochs_trained(run_dir)} epochs, not --epochs {args.epochs}"
            )
        result[f"conll03_test_f1_{name}"] = round(test_f1(archive, log), 2)
        metrics = json.loads((run_dir / "metrics.json").read_text())
        result[f"conll03_dev_f1_{name}"] = round(
            100 * metrics["best_validation_f1-measure-overall"], 2
        )
    speeds = words_per_sec(archives, args.batch_size, args.repeats)
    for name, value in speeds.items():
        result[f"words_per_sec_{name}"] = round(value, 1)
    result["speed_setup"] = (
        f"model forward incl. CRF Viterbi, no_grad, {args.threads} torch thread(s), batch "
        f"{args.batch_size}, all eng.testb sentences tensorized beforehand, median of "
        f"{args.repeats} interleaved rounds"
    )
    result["summary"] = {
        "columns": ["tagger", "config", "epochs", "test F1", "dev F1", "words/s"],
        "rows": [
            [
                name,
                TAGGERS[name],
                args.epochs,
                result[f"conll03_test_f1_{name}"],
                result[f"conll03_dev_f1_{name}"],
                result[f"words_per_sec_{name}"],
            ]
            for name in TAGGERS
        ],
    }
    save_results("scalar_mix", result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
