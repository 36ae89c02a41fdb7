"""
Scalar-mix "ELMo" tagger vs LD-Net tagger vs no LM on CoNLL-03 NER (issue 6): test F1 and
words/s, written to `benchmarks/results/scalar_mix.json`.

    .venv/bin/python benchmarks/scalar_mix_benchmark.py --budget-minutes 30
    .venv/bin/python benchmarks/scalar_mix_benchmark.py --speed-only          # no training
    .venv/bin/python benchmarks/scalar_mix_benchmark.py --taggers ldnet       # score one more
    .venv/bin/python benchmarks/scalar_mix_benchmark.py --forward-lm A --backward-lm B ...

1. Trains `training_configs/elmo/ner_scalar_mix.jsonnet` on eng.train (model selection on
   eng.testa) into `runs/elmo/ner_scalar_mix/`, for at most `--max-epochs` epochs and at most
   `--budget-minutes` of wall clock (the `wallclock_budget` callback below stops after the last
   epoch that fits; the best dev epoch is kept), unless that run's `model.tar.gz` exists.
2. Test F1 (eng.testb, percent, the model's span F1 as `allennlp evaluate` computes it) of that
   archive and of the LD-Net (`r_t`) and vanilla taggers that `benchmarks/tagging_benchmark.py`
   trains into `runs/tagging/ner_ldnet` / `runs/tagging/ner_vanilla` (same LMs; never
   retrained here), all scored here in the same way.
3. Words/s of each archive's `forward` on the untagged eng.testb sentences (CRF Viterbi, no
   loss, no gradients, `--threads` threads, batches of 64 sentences, tensorized beforehand).

Each figure records where it came from (`*_source`, `lm_archives`); a missing archive gives
`null` and a note, not a guess.
"""

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Dict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("LDNET_SHARED_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results" / "scalar_mix.json"
RUNS = ROOT / "runs"
CONFIG = ROOT / "training_configs" / "elmo" / "ner_scalar_mix.jsonnet"
ALLENNLP = str(Path(sys.executable).with_name("allennlp"))
# the shared CoNLL-03 files, unless the variables are set (e.g. to fixtures for a dry run)
CONLL03 = {
    name: os.environ.get(name, str(DATA / "conll2003" / file))
    for name, file in (
        ("CONLL03_TRAIN_DATA_PATH", "eng.train"),
        ("CONLL03_DEV_DATA_PATH", "eng.testa"),
        ("CONLL03_TEST_DATA_PATH", "eng.testb"),
    )
}

import torch  # noqa: E402

from allennlp.common import Params  # noqa: E402
from allennlp.common.params import with_overrides  # noqa: E402
from allennlp.common.plugins import import_plugins  # noqa: E402
from allennlp.training.callbacks.callback import TrainerCallback  # noqa: E402

import ldnet_allennlp  # noqa: E402,F401


@TrainerCallback.register("wallclock_budget")
class WallclockBudget(TrainerCallback):
    """Stops training after the last epoch that fits in `seconds` (at the mean epoch time)."""

    def __init__(self, serialization_dir: str, seconds: float) -> None:
        super().__init__(serialization_dir)
        self.seconds = seconds
        self.start = time.time()
        self.epochs_trained = 0

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary, **kwargs)
        self.start = time.time()

    def on_epoch(self, trainer, metrics, epoch: int, is_primary: bool = True, **kwargs) -> None:
        self.epochs_trained = epoch + 1
        elapsed = time.time() - self.start
        if elapsed + elapsed / (epoch + 1) > self.seconds:
            # the trainer checks patience right after the epoch callbacks: stop now
            trainer._metric_tracker._patience = 0
            trainer._metric_tracker._epochs_with_no_improvement = max(
                1, trainer._metric_tracker._epochs_with_no_improvement
            )


def set_threads(threads: int) -> None:
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)


def train_scalar_mix(args, out: Path) -> Dict[str, Any]:
    if (out / "model.tar.gz").exists():
        print(f"[scalar_mix] already trained: {out / 'model.tar.gz'}", flush=True)
        info = out / "benchmark_train.json"
        return json.loads(info.read_text()) if info.exists() else {}
    from allennlp.commands.train import train_model

    ext_vars = dict(
        CONLL03,
        FORWARD_LM_ARCHIVE=str(args.forward_lm),
        BACKWARD_LM_ARCHIVE=str(args.backward_lm),
    )
    params = Params.from_file(str(CONFIG), ext_vars=ext_vars).as_dict(quiet=True)
    params = with_overrides(params, {"trainer.num_epochs": args.max_epochs})
    params["trainer"]["callbacks"].append(
        {"type": "wallclock_budget", "seconds": args.budget_minutes * 60}
    )
    if args.max_train_sentences:
        params["dataset_reader"]["max_instances"] = args.max_train_sentences
    start = time.time()
    train_model(Params(params), serialization_dir=str(out))
    metrics = json.loads((out / "metrics.json").read_text())
    info = {
        "scalar_mix_train_wallclock_s": round(time.time() - start, 1),
        "scalar_mix_epochs_trained": metrics.get("epoch", -1) + 1,
        "scalar_mix_best_epoch": metrics.get("best_epoch"),
        "scalar_mix_dev_f1": 100 * metrics.get("best_validation_f1-measure-overall", 0.0),
        "scalar_mix_budget_minutes": args.budget_minutes,
        "scalar_mix_max_train_sentences": args.max_train_sentences,
    }
    (out / "benchmark_train.json").write_text(json.dumps(info, indent=2))
    return info


@contextlib.contextmanager
def lm_embeddings_keep_their_vocabulary():
    """
    While loading a tagger archive, `Embedding.extend_vocab` is a no-op. `Model.load` calls it
    on every nested `Embedding` with the tagger's vocabulary, which resizes (or refuses) the
    embedding of an LM inside the tagger whose namespace is also called `tokens`; the tagger's
    own embeddings were built from the archived vocabulary, so for them it changes nothing.
    (`dense_lm_scalar_mix` guards its LMs itself; `layer_selection` archives need this.)
    """
    from allennlp.modules.token_embedders import Embedding

    original = Embedding.extend_vocab
    Embedding.extend_vocab = lambda self, *args, **kwargs: None
    try:
        yield
    finally:
        Embedding.extend_vocab = original


def load_tagger(archive: Path):
    from allennlp.models.archival import load_archive

    with lm_embeddings_keep_their_vocabulary():
        return load_archive(str(archive), cuda_device=-1)


def tensorized_batches(instances, model, batch_size: int = 64):
    from allennlp.data import Batch

    for instance in instances:
        instance.index_fields(model.vocab)
    return [
        Batch(instances[start : start + batch_size]).as_tensor_dict()
        for start in range(0, len(instances), batch_size)
    ]


def untagged(reader, sentences):
    instances = []
    for sentence in sentences:
        instance = reader.text_to_instance(sentence)
        reader.apply_token_indexers(instance)
        instances.append(instance)
    return instances


def score(archive: Path, test_file: str, args, with_f1: bool) -> Dict[str, Any]:
    """
    Test F1 (percent; the model's own span F1 over all test sentences, as `allennlp evaluate`
    reports it) and words/s of the model's forward on the untagged test sentences.
    """
    from allennlp.data import Token

    loaded = load_tagger(archive)
    model = loaded.model.eval()
    reader = loaded.validation_dataset_reader
    read = list(reader.read(test_file))
    sentences = [[Token(token.text) for token in instance["tokens"]] for instance in read]
    result: Dict[str, Any] = {"lms": lm_archives_of(loaded.config.as_dict(quiet=True))}
    if with_f1:
        model.get_metrics(reset=True)
        batches = tensorized_batches(read, model)  # with the gold tags
        with torch.no_grad():
            for tensors in batches:
                model(**tensors)
        result["f1"] = 100 * model.get_metrics(reset=True)["f1-measure-overall"]
    speed_sentences = sentences[: args.speed_sentences or None]
    batches = tensorized_batches(untagged(reader, speed_sentences), model)
    num_words = sum(len(sentence) for sentence in speed_sentences)
    with torch.no_grad():
        model(**batches[0])  # warm-up
        start = time.perf_counter()
        for tensors in batches:
            model(**tensors)
        seconds = time.perf_counter() - start
    result.update(words_per_sec=round(num_words / seconds, 1), words=num_words, seconds=seconds)
    return result


def training_summary(key: str, run_dir: Path) -> Dict[str, Any]:
    """Epochs trained and dev F1 (percent) after the first epoch, from the run's metrics files."""
    epochs = sorted(run_dir.glob("metrics_epoch_*.json"))
    if not epochs:
        return {}
    first = json.loads((run_dir / "metrics_epoch_0.json").read_text())
    return {
        f"{key}_epochs_trained": len(epochs),
        f"{key}_dev_f1_after_epoch_1": round(100 * first["validation_f1-measure-overall"], 2),
        f"{key}_epoch_1_training_duration": first.get("training_duration"),
    }


def lm_archives_of(config: Dict[str, Any]) -> list:
    """The LM archive paths a tagger config names (scalar mix or layer selection), if any."""
    embedders = config["model"]["text_field_embedder"].get("token_embedders", {})
    return [
        value
        for embedder in embedders.values()
        for key, value in embedder.items()
        if key
        in ("forward_archive", "backward_archive", "forward_lm_archive", "backward_lm_archive")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forward-lm", type=Path, default=RUNS / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", type=Path, default=RUNS / "lm_backward" / "model.tar.gz")
    parser.add_argument("--lm-label", default=None, help="what the LMs are (default: from path)")
    parser.add_argument("--run-dir", type=Path, default=RUNS / "elmo" / "ner_scalar_mix")
    parser.add_argument("--budget-minutes", type=float, default=30.0)
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--max-train-sentences", type=int, default=None)
    parser.add_argument("--speed-only", action="store_true", help="no training, no F1")
    parser.add_argument("--speed-sentences", type=int, default=None, help="default: all")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--also",
        nargs="*",
        default=[],
        metavar="NAME=ARCHIVE",
        help="more tagger archives to score, under keys conll03_test_f1_NAME, words_per_sec_NAME",
    )
    parser.add_argument("--note", action="append", default=[], help="text added to notes")
    parser.add_argument(
        "--taggers",
        nargs="+",
        default=["scalar_mix", "ldnet", "vanilla"],
        help="which taggers to score now (the others keep their figures in the JSON)",
    )
    parser.add_argument(
        "--ldnet", type=Path, default=RUNS / "tagging" / "ner_ldnet" / "model.tar.gz"
    )
    parser.add_argument(
        "--vanilla", type=Path, default=RUNS / "tagging" / "ner_vanilla" / "model.tar.gz"
    )
    args = parser.parse_args()
    import_plugins()
    set_threads(args.threads)
    test_file = CONLL03["CONLL03_TEST_DATA_PATH"]
    results_file: Path = args.results
    results: Dict[str, Any] = json.loads(results_file.read_text()) if results_file.exists() else {}
    real = args.forward_lm.resolve() == (RUNS / "lm_forward" / "model.tar.gz").resolve()
    previous_commands = results.get("commands_run") or (
        [results["command"]] if "command" in results else []
    )
    results.update(
        {
            "lm_archives": [str(args.forward_lm), str(args.backward_lm)],
            "lm_label": args.lm_label or ("pretrained dense LMs" if real else "other LMs"),
            "f1_units": "percent, entity-level (allennlp span F1), CoNLL-03 eng.testb",
            "speed_setup": (
                f"model forward incl. CRF Viterbi, no_grad, {args.threads} thread(s), batches of "
                "64 sentences, eng.testb sentences tensorized beforehand, shared 2-core CPU"
            ),
            "machine": platform.processor() or platform.machine(),
            "title": "Scalar-mix ELMo vs LD-Net vs no LM: CoNLL-03 NER (issue 6)",
            "command": " ".join([Path(sys.executable).name] + sys.argv),
            "data": CONLL03,
        }
    )
    notes = []
    scalar_mix_archive = args.run_dir / "model.tar.gz"
    if not args.speed_only:
        set_threads(2)  # training gets both cores
        results.update(train_scalar_mix(args, args.run_dir))
        set_threads(args.threads)
    also = [tuple(item.split("=", 1)) for item in args.also]
    for key, archive in [
        ("scalar_mix", scalar_mix_archive),
        ("ldnet", args.ldnet),
        ("vanilla", args.vanilla),
    ] + [(name, Path(path)) for name, path in also]:
        if key not in args.taggers + [name for name, _ in also]:
            continue
        if not archive.exists():
            if not args.speed_only:
                results[f"conll03_test_f1_{key}"] = None
            results[f"words_per_sec_{key}"] = None
            notes.append(f"{archive} missing: no {key} F1 or words/s")
            continue
        scores = score(archive, test_file, args, with_f1=not args.speed_only)
        print(f"[{key}] {scores}", flush=True)
        if "f1" in scores:
            results[f"conll03_test_f1_{key}"] = round(scores["f1"], 2)
        if key in ("ldnet", "vanilla"):
            results[f"conll03_test_f1_{key}_source"] = (
                f"{archive}, trained by benchmarks/tagging_benchmark.py (not retrained here), "
                "scored here"
            )
        elif key != "scalar_mix":
            results[f"conll03_test_f1_{key}_source"] = (
                f"{archive}, given with --also (trained outside this script), scored here"
            )
        results[f"{key}_lm_archives"] = scores["lms"]
        results.update(training_summary(key, archive.parent))
        results[f"words_per_sec_{key}"] = scores["words_per_sec"]
        results[f"words_per_sec_{key}_archive"] = str(archive)
        results["speed_words"] = scores["words"]
    results["notes"] = (
        [
            note
            for note in results.get("notes", [])
            if not any(f"no {key} " in note for key in args.taggers)
        ]
        + notes
        + args.note
    )
    # every invocation that merged figures into this file, oldest first
    results["commands_run"] = previous_commands + [results["command"]]
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
