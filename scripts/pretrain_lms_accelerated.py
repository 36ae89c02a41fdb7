#!/usr/bin/env python
"""
Pre-trains the forward and backward dense LMs on an accelerator that has torch but no AllenNLP,
and turns the result into ordinary `dense_language_model` archives.

`allennlp train training_configs/lm/dense_lm_*.jsonnet` (`python -m benchmarks lm --stage
pretrain`) is the CPU path and stays the reference; this script trains *the same model* (the same
`DenseLSTMStack` class, read from `ldnet_allennlp/modules/dense_lstm.py`, the same embedding,
projection and adaptive softmax, under the parameter names of `DenseLanguageModel`, the same
vocabulary and losses) with a plain torch loop, so that it runs where only torch is installed.
Three steps:

    # 1. here: vocabulary (AllenNLP's, from the training text) and the corpus as token ids
    python scripts/pretrain_lms_accelerated.py pack --train runs/lm_data/train.txt \
        --train-conll ../shared/data/conll2003/eng.train \
        --train-conll ../shared/data/conll2000/train.txt \
        --dev runs/lm_data/dev.txt --output .lm_pack
    # 2. on the accelerator machine (torch only): one process per direction
    python scripts/pretrain_lms_accelerated.py train --pack .lm_pack --direction forward \
        --passes 10 --output OUT
    # 3. here: an AllenNLP archive per direction (config.json + vocabulary/ + weights.th)
    python scripts/pretrain_lms_accelerated.py archive --pack .lm_pack --weights OUT/... \
        --direction forward --output runs/lm_forward/model.tar.gz

`--train` files are LM text (one tokenized sentence per line), `--train-conll` files CoNLL
files (first column; `-DOCSTART-` lines skipped), so the tagging tasks' *training* text can
join the corpus and its frequent words the vocabulary (never dev or test text).
`train --resume WEIGHTS` continues from a saved state dict.  The backward LM is trained as the
forward computation over each sentence reversed, which is exactly what
`DenseLanguageModel(direction="backward")` computes (`run_backward`: position t reads tokens
t..n-1 and predicts token t-1).
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import tarfile
import tempfile
import time
import types
from collections import Counter
from pathlib import Path
from typing import Iterator, List

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
LM_CONFIG = {
    "forward": REPO / "training_configs/lm/dense_lm_forward.jsonnet",
    "backward": REPO / "training_configs/lm/dense_lm_backward.jsonnet",
}
MAX_SEQUENCE_LENGTH = 100  # the configs' dataset_reader.max_sequence_length (with <S>, </S>)
MAX_VOCAB_SIZE, MIN_COUNT = 40000, 3  # the configs' vocabulary


# ------------------------------------------------------------------------------------ pack


def lm_text_sentences(path: str) -> Iterator[List[str]]:
    """Tokenized sentences of an LM text file: one sentence per line, tokens split on spaces."""
    with open(path, encoding="utf-8-sig") as lines:
        for line in lines:
            if line.strip():
                yield line.split()


def conll_sentences(path: str) -> Iterator[List[str]]:
    """The words (first column) of a CoNLL file's sentences; `-DOCSTART-` lines skipped."""
    words: List[str] = []
    with open(path, encoding="utf-8-sig") as lines:
        for line in lines:
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if words:
                    yield words
                words = []
            else:
                words.append(columns[0])
    if words:
        yield words


def pack(args) -> None:
    from allennlp.data import Vocabulary

    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    sources = [lm_text_sentences(path) for path in args.train]
    sources += [conll_sentences(path) for path in args.train_conll or []]
    train = [
        ["<S>", *words, "</S>"]
        for source in sources
        for words in source
        if len(words) + 2 <= MAX_SEQUENCE_LENGTH
    ]
    dev = [
        ["<S>", *words, "</S>"]
        for words in lm_text_sentences(args.dev)
        if len(words) + 2 <= MAX_SEQUENCE_LENGTH
    ]
    extra_dev = dict(spec.split("=", 1) for spec in args.extra_dev)
    if args.vocabulary:  # keep an earlier pack's vocabulary (to continue training its LMs)
        vocab = Vocabulary.from_files(args.vocabulary)
    else:  # the counter is filled in reading order, as `Vocabulary.from_instances` fills it
        counter = Counter(token for sentence in train for token in sentence)
        vocab = Vocabulary(
            counter={"tokens": counter},
            max_vocab_size={"tokens": args.max_vocab_size},
            min_count={"tokens": args.min_count},
        )
    vocab.save_to_files(str(output / "vocabulary"))
    index = vocab.get_token_to_index_vocabulary("tokens")
    held_out = [
        (f"dev_{name}", [["<S>", *w, "</S>"] for w in lm_text_sentences(path)])
        for name, path in extra_dev.items()
    ]
    for name, sentences in [("train", train), ("dev", dev), *held_out]:
        ids = np.fromiter(
            (index.get(token, 1) for sentence in sentences for token in sentence), dtype=np.uint16
        )
        lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int32)
        np.savez(output / f"{name}.npz", ids=ids, lengths=lengths)
    with open(output / "train_text.txt", "w", encoding="utf-8") as text:
        text.writelines(" ".join(sentence[1:-1]) + "\n" for sentence in train)
    facts = {
        "train_files": args.train,
        "train_conll_files": args.train_conll or [],
        "vocabulary_from": args.vocabulary,
        "dev_file": args.dev,
        "train_sentences": len(train),
        "train_tokens_with_boundaries": int(sum(len(s) for s in train)),
        "dev_sentences": len(dev),
        "extra_dev": extra_dev,
        "vocab_size": vocab.get_vocab_size("tokens"),
        "model_settings": {d: model_settings(d) for d in sorted(LM_CONFIG)},
    }
    (output / "pack.json").write_text(json.dumps(facts, indent=2))
    print(json.dumps(facts, indent=2))


# ------------------------------------------------------------------------------------ train


def load_dense_lstm():
    """`ldnet_allennlp/modules/dense_lstm.py`, importable without AllenNLP installed."""
    try:
        import allennlp.common  # noqa: F401
    except ImportError:  # only `FromParams` and `ConfigurationError` are used by that file
        common = types.ModuleType("allennlp.common")
        common.FromParams = object
        checks = types.ModuleType("allennlp.common.checks")
        checks.ConfigurationError = ValueError
        common.checks = checks
        sys.modules.update(
            {
                "allennlp": types.ModuleType("allennlp"),
                "allennlp.common": common,
                "allennlp.common.checks": checks,
            }
        )
    spec = importlib.util.spec_from_file_location(
        "dense_lstm", REPO / "ldnet_allennlp/modules/dense_lstm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Embedder(torch.nn.Module):
    """Holds the word embedding under AllenNLP's name (`token_embedder_tokens.weight`)."""

    def __init__(self, vocab_size: int, dim: int) -> None:
        super().__init__()
        self.token_embedder_tokens = torch.nn.Embedding(vocab_size, dim)


class PlainDenseLM(torch.nn.Module):
    """
    `DenseLanguageModel`'s layers under its parameter names; trained left to right. The dense
    stack is `DenseLSTMStack` itself; the head (projection, adaptive softmax over the next
    token) is `DenseLanguageModel.forward`'s in the form this AllenNLP-free script can run, and
    `tests/lm/pretrain_lms_accelerated_test.py` checks that the archived `DenseLanguageModel`
    scores the perplexity this model logged.
    """

    def __init__(self, dense_lstm, vocab_size: int, settings: dict) -> None:
        super().__init__()
        encoder = settings["encoder"]
        self._text_field_embedder = _Embedder(vocab_size, encoder["input_size"])
        self._encoder = dense_lstm.DenseLSTMStack(**encoder)
        self._dropout = torch.nn.Dropout(settings["dropout"])
        self._projection = torch.nn.Linear(
            self._encoder.get_output_dim(), settings["projection_dim"]
        )
        self._softmax = torch.nn.AdaptiveLogSoftmaxWithLoss(
            settings["projection_dim"], vocab_size, settings["cutoffs"], settings["div_value"]
        )

    def forward(self, ids: torch.Tensor, mask: torch.Tensor):
        """ids, mask: `(batch_size, num_tokens)`; returns (NLL sum, number of targets)."""
        embedded = self._dropout(self._text_field_embedder.token_embedder_tokens(ids))
        dense = self._encoder(embedded, mask)
        projected = self._dropout(torch.relu(self._projection(dense[:, :-1])))
        target_mask = mask[:, 1:]
        out = self._softmax(projected[target_mask], ids[:, 1:][target_mask]).output
        return -out.sum(), int(target_mask.sum())


def model_settings(direction: str) -> dict:
    """The model block of the LM config, rendered with jsonnet (`pack` stores it in pack.json)."""
    import _jsonnet

    env = {"LM_TRAIN_DATA_PATH": "", "LM_VALIDATION_DATA_PATH": ""}
    model = json.loads(_jsonnet.evaluate_file(str(LM_CONFIG[direction]), ext_vars=env))["model"]
    encoder = {k: v for k, v in model["encoder"].items() if k != "type"}
    return {
        "encoder": encoder,
        "projection_dim": model["projection_dim"],
        "cutoffs": model["cutoffs"],
        "div_value": model.get("div_value", 4.0),
        "dropout": model.get("dropout", 0.1),
    }


def batches(ids, lengths, batch_size: int, rng, device, backward: bool, shuffle: bool):
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    order = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    chunk = batch_size * 100
    groups = []
    for start in range(0, len(order), chunk):
        part = order[start : start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        groups.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    if shuffle:
        groups = [groups[i] for i in rng.permutation(len(groups))]
    for group in groups:
        width = int(lengths[group].max())
        block = np.zeros((len(group), width), dtype=np.int64)
        for row, s in enumerate(group):
            sentence = ids[offsets[s] : offsets[s + 1]]
            block[row, : len(sentence)] = sentence[::-1] if backward else sentence
        tensor = torch.from_numpy(block).to(device, non_blocking=True)
        yield tensor, tensor != 0


def evaluate(model, data, device, backward: bool) -> float:
    model.eval()
    nll, count = 0.0, 0
    with torch.no_grad():
        for ids, mask in batches(*data, 256, None, device, backward, shuffle=False):
            loss, n = model(ids, mask)
            nll += float(loss)
            count += n
    model.train()
    return math.exp(nll / count)


class Checkpoints:
    """
    The best LM so far by dev perplexity (kept in memory, and saved to `path`, in fp16 with
    `fp16`), and every evaluation's point (`curve`: tokens seen, seconds, dev perplexity).
    """

    def __init__(self, model, dev_data, device, backward: bool, path: Path, fp16: bool) -> None:
        self.model, self.dev_data, self.device, self.backward = model, dev_data, device, backward
        self.path, self.fp16 = path, fp16
        self.best, self.best_state, self.curve = float("inf"), None, []

    def evaluate(self, tokens_seen: int, seconds: float) -> float:
        """Dev perplexity now; saves the LM if it is the best so far."""
        perplexity = evaluate(self.model, self.dev_data, self.device, self.backward)
        self.curve.append(
            {"tokens_seen": tokens_seen, "seconds": round(seconds, 1), "dev_perplexity": perplexity}
        )
        if perplexity < self.best:
            self.best = perplexity
            self.save()
        return perplexity

    def save(self) -> None:
        dtype = torch.float16 if self.fp16 else None
        self.best_state = {
            key: (
                value.detach().cpu().to(dtype)
                if dtype and value.is_floating_point()
                else value.detach().cpu().clone()
            )
            for key, value in self.model.state_dict().items()
        }
        torch.save(self.best_state, self.path)


def extra_dev_sets(pack_dir: Path) -> dict:
    """The pack's other held-out sets (`pack --extra-dev NAME=FILE`): name -> (ids, lengths)."""
    sets = {}
    for name in json.loads((pack_dir / "pack.json").read_text()).get("extra_dev", {}):
        data = np.load(pack_dir / f"dev_{name}.npz")
        sets[name] = (data["ids"].astype(np.int64), data["lengths"])
    return sets


def train(args) -> None:
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pack_dir = Path(args.pack)
    train_npz, dev_npz = np.load(pack_dir / "train.npz"), np.load(pack_dir / "dev.npz")
    train_data = (train_npz["ids"].astype(np.int64), train_npz["lengths"])
    dev_data = (dev_npz["ids"].astype(np.int64), dev_npz["lengths"])
    vocab_size = json.loads((pack_dir / "pack.json").read_text())["vocab_size"]
    settings = json.loads((pack_dir / "pack.json").read_text())["model_settings"][args.direction]
    model = PlainDenseLM(load_dense_lstm(), vocab_size, settings).to(device)
    if args.resume:
        # a state dict saved in fp16 (to travel) is copied into the fp32 parameters
        model.load_state_dict(torch.load(args.resume, map_location=device))
    backward = args.direction == "backward"
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    log = {"direction": args.direction, "settings": settings, "args": vars(args), "passes": []}
    checkpoints = Checkpoints(
        model, dev_data, device, backward, output / f"lm_{args.direction}.th", args.fp16
    )
    log["dev_perplexity_start"] = evaluate(model, dev_data, device, backward)
    if args.passes == 0:  # the untrained LM (seeded initialisation): the "0 passes" point
        checkpoints.best = log["dev_perplexity_start"]
        checkpoints.save()
    else:
        run_passes(args, model, train_data, rng, device, backward, checkpoints, log)
    log["best_dev_perplexity"] = checkpoints.best
    log["curve"] = checkpoints.curve
    log["device"] = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    if checkpoints.best_state is not None:
        model.load_state_dict(checkpoints.best_state)
        log["extra_dev_perplexity"] = {
            name: evaluate(model, data, device, backward)
            for name, data in extra_dev_sets(pack_dir).items()
        }
    (output / f"lm_{args.direction}.json").write_text(json.dumps(log, indent=2))


def run_passes(args, model, train_data, rng, device, backward, checkpoints, log) -> None:
    """
    Up to `--passes` passes, the learning rate halved after a pass whose end does not improve
    dev perplexity. Dev perplexity is also measured every `--eval-every-tokens` tokens;
    `--stop-after-seconds` stops in the middle of a pass (that pass is logged as `partial`),
    and `--max-seconds` starts no pass that it expects to end after it.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    started, seen, next_eval = time.time(), 0, args.eval_every_tokens or 0
    for epoch in range(args.passes):
        tokens, nll, count, t0, stopped = 0, 0.0, 0, time.time(), False
        for ids, mask in batches(*train_data, args.batch_size, rng, device, backward, True):
            loss_sum, n = model(ids, mask)
            optimizer.zero_grad(set_to_none=True)
            (loss_sum / max(n, 1)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            tokens += int(mask.sum())
            nll += float(loss_sum.detach())
            count += n
            if next_eval and seen + tokens >= next_eval:
                checkpoints.evaluate(seen + tokens, time.time() - started)
                next_eval += args.eval_every_tokens
            stop = args.stop_after_seconds
            if stop is not None and time.time() - started > stop:
                stopped = True
                break
        seen += tokens
        seconds = time.time() - t0
        best_before = checkpoints.best
        entry = {
            "pass": epoch + 1,
            "partial": stopped,
            "tokens": tokens,
            "seconds": round(seconds, 1),
            "tokens_per_sec": round(tokens / max(seconds, 1e-9)),
            "train_perplexity": math.exp(nll / max(count, 1)),
            "dev_perplexity": checkpoints.evaluate(seen, time.time() - started),
            "lr": optimizer.param_groups[0]["lr"],
        }
        log["passes"].append(entry)
        print(json.dumps(entry), flush=True)
        if stopped or time.time() - started + seconds > args.max_seconds:
            break
        if entry["dev_perplexity"] >= best_before:  # halve the learning rate
            for group in optimizer.param_groups:
                group["lr"] /= 2


# ------------------------------------------------------------------------------------ archive


def archive(args) -> None:
    import _jsonnet

    pack_dir = Path(args.pack)
    env = {
        "LM_TRAIN_DATA_PATH": args.train_data_path or str(pack_dir / "train_text.txt"),
        "LM_VALIDATION_DATA_PATH": args.validation_data_path,
    }
    config = json.loads(_jsonnet.evaluate_file(str(LM_CONFIG[args.direction]), ext_vars=env))
    config["vocabulary"] = {"type": "from_files", "directory": "vocabulary"}
    # the archive describes the model that was trained: the settings `pack` recorded
    settings = json.loads((pack_dir / "pack.json").read_text())["model_settings"][args.direction]
    config["model"]["encoder"].update(settings["encoder"])
    words = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    words["embedding_dim"] = settings["encoder"]["input_size"]
    config["model"].update({k: v for k, v in settings.items() if k != "encoder"})
    # fp16 halves the archive; AllenNLP copies the values into the model's fp32 parameters
    dtype = torch.float16 if args.fp16 else torch.float32
    weights = {
        key: value.to(dtype) if value.is_floating_point() else value
        for key, value in torch.load(args.weights, map_location="cpu").items()
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as staging_dir:
        staging = Path(staging_dir)
        (staging / "config.json").write_text(json.dumps(config, indent=2))
        torch.save(weights, staging / "weights.th")
        with tarfile.open(output, "w:gz") as tar:
            tar.add(staging / "config.json", arcname="config.json")
            tar.add(staging / "weights.th", arcname="weights.th")
            tar.add(pack_dir / "vocabulary", arcname="vocabulary")
    # Loading it back is the check: AllenNLP rebuilds DenseLanguageModel from the config and
    # loads the state dict strictly, so a missing or misnamed parameter fails here.
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401

    model = load_archive(str(output)).model
    print(f"{output}: {type(model).__name__} ({model.direction}), loaded back")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack")
    p.add_argument("--train", action="append", required=True, help="LM text (repeatable)")
    p.add_argument("--train-conll", action="append", help="a CoNLL file's words (repeatable)")
    p.add_argument("--vocabulary", help="reuse this vocabulary directory instead of counting")
    p.add_argument("--max-vocab-size", type=int, default=MAX_VOCAB_SIZE)
    p.add_argument("--min-count", type=int, default=MIN_COUNT)
    p.add_argument("--dev", required=True)
    p.add_argument(
        "--extra-dev",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="another held-out LM text, scored by `train` at the end (repeatable)",
    )
    p.add_argument("--output", required=True)
    t = commands.add_parser("train")
    t.add_argument("--pack", required=True)
    t.add_argument("--direction", choices=sorted(LM_CONFIG), required=True)
    t.add_argument("--passes", type=int, default=10, help="0 saves the initialised LM")
    t.add_argument("--max-seconds", type=float, default=480)
    t.add_argument("--batch-size", type=int, default=128)
    t.add_argument("--lr", type=float, default=0.002)
    t.add_argument("--seed", type=int, default=13)
    t.add_argument("--resume", help="a state dict to start from (an LM archive's weights.th)")
    t.add_argument(
        "--stop-after-seconds",
        type=float,
        default=None,
        help="stop in the middle of a pass after this many seconds",
    )
    t.add_argument("--eval-every-tokens", type=int, default=0, help="dev perplexity every N tokens")
    t.add_argument("--fp16", action="store_true", help="save the best LM in fp16")
    t.add_argument("--output", required=True)
    a = commands.add_parser("archive")
    a.add_argument("--pack", required=True)
    a.add_argument("--weights", required=True)
    a.add_argument("--direction", choices=sorted(LM_CONFIG), required=True)
    a.add_argument("--train-data-path")
    a.add_argument("--validation-data-path", default="runs/lm_data/dev.txt")
    a.add_argument("--fp16", action="store_true", help="store the weights in fp16")
    a.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    {"pack": pack, "train": train, "archive": archive}[args.command](args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
