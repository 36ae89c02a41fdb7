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
from typing import Dict, Iterator, List

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


def batch_groups(lengths, batch_size: int, rng, shuffle: bool) -> list:
    """
    One pass's batches as arrays of sentence indices: sentences of similar length together
    (sorted within windows of 100 batches), in a random order of sentences and of batches with
    `shuffle` (drawn from `rng`), else in corpus order.
    """
    order = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    chunk = batch_size * 100
    groups = []
    for start in range(0, len(order), chunk):
        part = order[start : start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        groups.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    if shuffle:
        groups = [groups[i] for i in rng.permutation(len(groups))]
    return groups


def batch_tensors(ids, offsets, lengths, group, device, backward: bool):
    """`(ids, mask)`, both `(len(group), longest)`: the sentences of `group`, zero-padded."""
    width = int(lengths[group].max())
    block = np.zeros((len(group), width), dtype=np.int64)
    for row, s in enumerate(group):
        sentence = ids[offsets[s] : offsets[s + 1]]
        block[row, : len(sentence)] = sentence[::-1] if backward else sentence
    tensor = torch.from_numpy(block).to(device, non_blocking=True)
    return tensor, tensor != 0


def batches(ids, lengths, batch_size: int, rng, device, backward: bool, shuffle: bool):
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for group in batch_groups(lengths, batch_size, rng, shuffle):
        yield batch_tensors(ids, offsets, lengths, group, device, backward)


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
    `fp16`), and every evaluation's point (`curve`: tokens seen, seconds, dev perplexity, and
    with `held_out` (name -> data, `train --curve-held-out`) each of those sets' perplexity).
    """

    def __init__(
        self, model, dev_data, device, backward: bool, path: Path, fp16: bool, held_out=None
    ) -> None:
        self.model, self.dev_data, self.device, self.backward = model, dev_data, device, backward
        self.path, self.fp16, self.held_out = path, fp16, held_out or {}
        self.best, self.best_state, self.curve = float("inf"), None, []

    def evaluate(self, tokens_seen: int, seconds: float) -> float:
        """Dev perplexity now; saves the LM if it is the best so far."""
        perplexity = evaluate(self.model, self.dev_data, self.device, self.backward)
        point = {"tokens_seen": tokens_seen, "seconds": round(seconds, 1)}
        point["dev_perplexity"] = perplexity
        if self.held_out:
            point["held_out_perplexity"] = {
                name: evaluate(self.model, data, self.device, self.backward)
                for name, data in self.held_out.items()
            }
        self.curve.append(point)
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


# the arguments a recovered run must share with the run it continues
RECOVER_MUST_MATCH = ("pack", "direction", "batch_size", "lr", "seed", "eval_every_tokens", "fp16")


def state_path(output: Path, direction: str) -> Path:
    return output / f"training_state_{direction}.pt"


def train(args) -> None:
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pack_dir, output = Path(args.pack), Path(args.output)
    train_npz, dev_npz = np.load(pack_dir / "train.npz"), np.load(pack_dir / "dev.npz")
    train_data = (train_npz["ids"].astype(np.int64), train_npz["lengths"])
    dev_data = (dev_npz["ids"].astype(np.int64), dev_npz["lengths"])
    vocab_size = json.loads((pack_dir / "pack.json").read_text())["vocab_size"]
    settings = json.loads((pack_dir / "pack.json").read_text())["model_settings"][args.direction]
    model = PlainDenseLM(load_dense_lstm(), vocab_size, settings).to(device)
    backward = args.direction == "backward"
    saved = recovered_state(args, output)
    if args.resume and saved is None:
        # a state dict saved in fp16 (to travel) is copied into the fp32 parameters
        model.load_state_dict(lm_weights(args.resume, device))
    output.mkdir(parents=True, exist_ok=True)
    log = {"direction": args.direction, "settings": settings, "args": vars(args), "passes": []}
    # every process of the run, the first one's arguments first
    earlier = [] if saved is None else saved.get("args_history", [saved["args"]])
    log["args_history"] = earlier + [vars(args)]
    held_out = extra_dev_sets(pack_dir) if args.curve_held_out else None
    checkpoints = Checkpoints(
        model, dev_data, device, backward, output / f"lm_{args.direction}.th", args.fp16, held_out
    )
    if saved is not None:
        log["passes"], log["dev_perplexity_start"] = saved["passes"], saved["dev_perplexity_start"]
        checkpoints.best, checkpoints.curve = saved["best"], saved["curve"]
    else:
        log["dev_perplexity_start"] = evaluate(model, dev_data, device, backward)
    if args.passes == 0:  # the untrained LM (seeded initialisation): the "0 passes" point
        checkpoints.best = log["dev_perplexity_start"]
        checkpoints.save()
    else:
        Training(args, model, train_data, rng, device, checkpoints, log).run(saved)
    log["best_dev_perplexity"] = checkpoints.best
    log["curve"] = checkpoints.curve
    log["device"] = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    if checkpoints.path.exists():
        model.load_state_dict(torch.load(checkpoints.path, map_location=device))
        log["extra_dev_perplexity"] = {
            name: evaluate(model, data, device, backward)
            for name, data in extra_dev_sets(pack_dir).items()
        }
    (output / f"lm_{args.direction}.json").write_text(json.dumps(log, indent=2))


def recovered_state(args, output: Path):
    """
    With `--recover`, the training state saved in `output` (None if there is none); without it,
    an error if `output` holds one, so that a run is never restarted over another by mistake.
    """
    path = state_path(output, args.direction)
    if not args.recover:
        if path.exists():
            raise SystemExit(
                f"{path} exists: continue that run with --recover, or choose another --output"
            )
        return None
    if not path.exists():
        raise SystemExit(f"--recover: no training state {path} (start without --recover)")
    saved = torch.load(path, map_location="cpu", weights_only=False)
    for key in RECOVER_MUST_MATCH:
        if saved["args"].get(key) != getattr(args, key):
            raise SystemExit(
                f"--recover: --{key.replace('_', '-')} is {getattr(args, key)!r}, but {path} was "
                f"trained with {saved['args'].get(key)!r}"
            )
    return saved


class Training:
    """
    Up to `--passes` passes, the learning rate halved after a pass whose end does not improve on
    the best dev perplexity of the earlier pass ends. Dev perplexity is also measured every
    `--eval-every-tokens` tokens (the best of all evaluations is the LM kept);
    `--stop-after-seconds` stops in the middle of a pass (that pass is logged as `partial`), and
    `--max-seconds` starts no pass that it expects to end after it (both count this process's
    time only).

    The training state (weights, Adam's moments, the random generators, the position in the
    pass) is saved to `training_state_<direction>.pt` every `--save-state-every-seconds` and at a
    stop, and `--recover` continues from it exactly: the same batches, in the same order, with
    the same dropout masks, as the run would have seen without the stop.
    """

    def __init__(self, args, model, train_data, rng, device, checkpoints, log) -> None:
        self.args, self.model, self.rng, self.device = args, model, rng, device
        self.ids, self.lengths = train_data
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        self.checkpoints, self.log = checkpoints, log
        self.optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        self.backward = args.direction == "backward"
        # the position in training: every value the next batch and the logs depend on
        self.progress = {
            "pass": 0, "batch": 0, "tokens": 0, "nll": 0.0, "count": 0, "pass_seconds": 0.0,
            "seen": 0, "seconds": 0.0, "next_eval": args.eval_every_tokens or 0,
            "best_pass_end": float("inf"), "rng": rng.bit_generator.state,
        }  # fmt: skip

    def run(self, saved) -> None:
        args, progress = self.args, self.progress
        if saved is not None:
            self.restore(saved)
        self.started = time.time()
        self.last_save = self.started
        while progress["pass"] < args.passes:
            self.rng.bit_generator.state = progress["rng"]  # the pass's batches, as drawn
            groups = batch_groups(self.lengths, args.batch_size, self.rng, True)
            stopped = self.train_pass(groups)
            go_on = self.end_of_pass(stopped)
            if not stopped and args.save_state_every_seconds:
                self.save_state()  # every pass end, the last one included
            if not go_on:
                return

    def train_pass(self, groups) -> bool:
        """Trains on `groups` from the saved position on; whether it stopped inside the pass."""
        args, progress = self.args, self.progress
        pass_start = time.time()
        while progress["batch"] < len(groups):
            group = groups[progress["batch"]]
            ids, mask = batch_tensors(
                self.ids, self.offsets, self.lengths, group, self.device, self.backward
            )
            loss_sum, n = self.model(ids, mask)
            self.optimizer.zero_grad(set_to_none=True)
            (loss_sum / max(n, 1)).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            self.optimizer.step()
            progress["batch"] += 1
            progress["tokens"] += int(mask.sum())
            progress["nll"] += float(loss_sum.detach())
            progress["count"] += n
            seen = progress["seen"] + progress["tokens"]
            if progress["next_eval"] and seen >= progress["next_eval"]:
                self.checkpoints.evaluate(seen, self.seconds())
                progress["next_eval"] += args.eval_every_tokens
            now = time.time()
            inside = progress["batch"] < len(groups)  # a stop ends a pass only inside it
            if (
                inside
                and args.stop_after_seconds is not None
                and now - self.started > args.stop_after_seconds
            ):
                progress["pass_seconds"] += now - pass_start
                return True
            if (
                args.save_state_every_seconds
                and now - self.last_save > args.save_state_every_seconds
            ):
                progress["pass_seconds"] += now - pass_start
                pass_start = now
                self.save_state()
        progress["pass_seconds"] += time.time() - pass_start
        return False

    def end_of_pass(self, stopped: bool) -> bool:
        """Logs the pass (`partial` if stopped); whether a further pass may start."""
        args, progress = self.args, self.progress
        seen = progress["seen"] + progress["tokens"]
        seconds = progress["pass_seconds"]
        entry = {
            "pass": progress["pass"] + 1,
            "partial": stopped,
            "tokens": progress["tokens"],
            "seconds": round(seconds, 1),
            "tokens_per_sec": round(progress["tokens"] / max(seconds, 1e-9)),
            "train_perplexity": math.exp(progress["nll"] / max(progress["count"], 1)),
            "dev_perplexity": self.checkpoints.evaluate(seen, self.seconds()),
            "lr": self.optimizer.param_groups[0]["lr"],
        }
        self.log["passes"].append(entry)
        print(json.dumps(entry), flush=True)
        if stopped:  # after the stop's evaluation, so that `best` and the curve include it
            self.save_state()
            return False
        if entry["dev_perplexity"] >= progress["best_pass_end"]:  # halve the learning rate
            for group in self.optimizer.param_groups:
                group["lr"] /= 2
        progress["best_pass_end"] = min(progress["best_pass_end"], entry["dev_perplexity"])
        progress.update(
            {"pass": progress["pass"] + 1, "batch": 0, "tokens": 0, "nll": 0.0, "count": 0,
             "pass_seconds": 0.0, "seen": seen, "rng": self.rng.bit_generator.state}
        )  # fmt: skip
        return time.time() - self.started + seconds <= args.max_seconds

    def seconds(self) -> float:
        """Seconds of training so far, over every recovered process."""
        return self.progress["seconds"] + time.time() - self.started

    def save_state(self) -> None:
        state = {
            "args": vars(self.args),
            "args_history": self.log["args_history"],
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "progress": dict(self.progress, seconds=self.seconds()),
            "passes": [entry for entry in self.log["passes"] if not entry["partial"]],
            "dev_perplexity_start": self.log["dev_perplexity_start"],
            "best": self.checkpoints.best,
            "curve": self.checkpoints.curve,
        }
        path = state_path(Path(self.args.output), self.args.direction)
        torch.save(state, path.with_suffix(".tmp"))
        os.replace(path.with_suffix(".tmp"), path)  # a kill while saving keeps the last state
        self.last_save = time.time()

    def restore(self, saved) -> None:
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["torch_rng"])
        if saved["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        self.progress.update(saved["progress"])


def lm_weights(path: str, device) -> Dict[str, torch.Tensor]:
    """
    The LM's state dict in `path`: a state dict (an LM archive's `weights.th`, what `train`
    keeps), or a run's training state (`training_state_<direction>.pt`: its last weights,
    where a stopped run left off).
    """
    saved = torch.load(path, map_location=device)
    is_state = isinstance(saved, dict) and {"model", "optimizer", "progress"} <= set(saved)
    return saved["model"] if is_state else saved


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
        for key, value in lm_weights(args.weights, "cpu").items()
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
    t.add_argument(
        "--resume",
        help="a state dict to start from (an LM archive's weights.th), or a run's training "
        "state (its last weights)",
    )
    t.add_argument(
        "--stop-after-seconds",
        type=float,
        default=None,
        help="stop in the middle of a pass after this many seconds",
    )
    t.add_argument("--eval-every-tokens", type=int, default=0, help="dev perplexity every N tokens")
    t.add_argument("--fp16", action="store_true", help="save the best LM in fp16")
    t.add_argument(
        "--curve-held-out",
        action="store_true",
        help="score the pack's other held-out sets (--extra-dev) at every dev evaluation too",
    )
    t.add_argument(
        "--save-state-every-seconds",
        type=float,
        default=0,
        help="save the training state this often (it is always saved at a stop)",
    )
    t.add_argument(
        "--recover",
        action="store_true",
        help="continue the run whose training state --output holds, exactly where it stopped",
    )
    t.add_argument("--output", required=True)
    a = commands.add_parser("archive")
    a.add_argument("--pack", required=True)
    a.add_argument(
        "--weights",
        required=True,
        help="the LM's state dict, or a run's training state (its last weights)",
    )
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
