"""
The `lm` study's training throughput stage: tokens/s of one full training step
(forward, backward, Adam step) of our `dense_language_model` (training_configs/lm/) against
allennlp-models' `language_model` with a stacked `lstm` contextualizer whose parameter count
matches our dense LSTM stack (same layers, hidden size solved for), same embedding size,
vocabulary and batches, in one process. allennlp-models' LM uses its sampled softmax
(`num_samples` 8192, as in its own LM configs); ours its adaptive softmax. Tokens = non-padding
tokens, <S> and </S> included.

Timing (`harness.timing.interleaved`): `--warmup` batches per model first, then `--rounds`
rounds of `--batches` fresh batches each, the models' order alternating between rounds;
tokens/s of the median round.
"""

import argparse
import itertools
import os
import statistics
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.timing import interleaved, printed_rounds, set_threads


def lstm_parameters(input_size: int, hidden: int, layers: int) -> int:
    return sum(
        4 * hidden * ((input_size if i == 0 else hidden) + hidden) + 8 * hidden
        for i in range(layers)
    )


def matching_lstm_hidden(target: int, input_size: int, layers: int) -> int:
    return min(range(1, 4096), key=lambda h: abs(lstm_parameters(input_size, h, layers) - target))


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def timing_batches(args: argparse.Namespace, batch_size: int):
    """
    The vocabulary (`--vocabulary`, else built from the sentences), where it came from, and
    tensorised batches of `batch_size` sentences of similar length (as the bucket sampler
    makes them) from the first `--sentences` of `--data`, in a fixed random order.
    """
    import torch
    from allennlp.data import Batch, Vocabulary

    from ldnet_allennlp.lm import DenseLMTextDatasetReader

    reader = DenseLMTextDatasetReader(max_sequence_length=100)
    instances = list(itertools.islice(reader.read(args.data), args.sentences))
    if os.path.isdir(args.vocabulary):
        vocab, source = Vocabulary.from_files(args.vocabulary), args.vocabulary
    else:
        vocab = Vocabulary.from_instances(instances, max_vocab_size={"tokens": 40000})
        source = f"built from the first {len(instances)} sentences of {args.data}"
    instances.sort(key=lambda i: len(i["source"].tokens))
    batches = []
    for start in range(0, len(instances) - batch_size + 1, batch_size):
        batch = Batch(instances[start : start + batch_size])
        batch.index_instances(vocab)
        batches.append(batch.as_tensor_dict())
    generator = torch.Generator().manual_seed(0)
    batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    return vocab, source, batches


def allennlp_lm(vocab, dense):
    """allennlp-models' `language_model`: a stacked LSTM with as many parameters as `dense`'s
    dense LSTM stack, its sampled softmax."""
    from allennlp.common import Params
    from allennlp.models import Model

    dim = dense.embedding_dim
    hidden = matching_lstm_hidden(count(dense.encoder), dim, dense.num_layers)
    embedder = {"token_embedders": {"tokens": {"type": "embedding", "embedding_dim": dim}}}
    contextualizer = {"type": "lstm", "input_size": dim, "hidden_size": hidden}
    contextualizer["num_layers"] = dense.num_layers
    params = {"type": "language_model", "text_field_embedder": embedder, "dropout": 0.1}
    params["contextualizer"] = contextualizer
    params["num_samples"] = min(8192, vocab.get_vocab_size("tokens") // 2)
    return Model.from_params(vocab=vocab, params=Params(params)), hidden


def tokens(batch) -> int:
    return int((batch["source"]["tokens"]["tokens"] != 0).sum())


def timed_rounds(
    args: argparse.Namespace, models: Dict[str, Any], batches: List[Dict]
) -> Dict[str, List[float]]:
    """Tokens/s per round, by model: `--warmup` batches per model, then `--rounds` interleaved
    rounds of `--batches` fresh batches, each a training step (Adam, lr 1e-3) on the LM's loss."""
    import torch

    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-3) for name, m in models.items()}

    def steps(name: str, batches: List[Dict]) -> None:
        models[name].train()
        for batch in batches:
            optimizers[name].zero_grad()
            models[name](**batch)["loss"].backward()
            optimizers[name].step()

    def fresh(round_index: int) -> List[Dict]:
        return batches[args.warmup + round_index * args.batches :][: args.batches]

    warmup = {name: (lambda n=name: steps(n, batches[: args.warmup])) for name in models}
    cases = {name: (lambda i, n=name: steps(n, fresh(i))) for name in models}
    progress = printed_rounds("training seconds", lambda seconds: f"{seconds:.1f}")
    timings = interleaved(
        cases, args.rounds, warmup=warmup, order="alternate", pass_round=True, on_round=progress
    )
    words = [sum(map(tokens, fresh(i))) for i in range(args.rounds)]
    return {name: [w / s for w, s in zip(words, timings.values(name))] for name in models}


def throughput(args: argparse.Namespace) -> Dict[str, Any]:
    """The throughput keys of lm.json (tokens/s medians, their ratio, every round, the set-up)."""
    import torch
    from allennlp.common import Params
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    set_threads(args.threads)
    torch.manual_seed(0)
    os.environ.setdefault("LM_TRAIN_DATA_PATH", args.data)
    os.environ.setdefault("LM_VALIDATION_DATA_PATH", args.data)
    config = Params.from_file(str(ROOT / "training_configs/lm/dense_lm_forward.jsonnet"))
    model_params = config.pop("model").as_dict(quiet=True)
    if args.cutoffs:  # only for smoke tests on tiny vocabularies
        model_params["cutoffs"] = [int(c) for c in args.cutoffs.split(",")]
    batch_size = args.batch_size or config["data_loader"]["batch_sampler"]["batch_size"]
    vocab, vocab_source, batches = timing_batches(args, batch_size)
    dense = Model.from_params(vocab=vocab, params=Params(dict(model_params)))
    lstm, hidden = allennlp_lm(vocab, dense)
    models, machine = {"dense": dense, "allennlp_lstm": lstm}, hardware()
    needed = args.warmup + args.rounds * args.batches
    if len(batches) < needed:
        raise SystemExit(f"need {needed} batches, have {len(batches)}: raise --sentences")
    runs = timed_rounds(args, models, batches)
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    setup = {
        "batch_size_sentences": batch_size,
        "mean_tokens_per_batch": round(statistics.mean(tokens(b) for b in batches[:needed]), 1),
        "warmup_batches": args.warmup,
        "rounds": args.rounds,
        "batches_per_round": args.batches,
        "data": args.data,
        "vocabulary": vocab_source,
        "vocab_size": vocab.get_vocab_size("tokens"),
        "dense_lm_parameters": count(dense),
        "dense_stack_parameters": count(dense.encoder),
        "dense_stack": f"{dense.num_layers} layers x {dense.hidden_size} hidden, "
        f"{dense.embedding_dim}-d embeddings, output {dense.get_output_dim()}",
        "allennlp_lm_parameters": count(lstm),
        "allennlp_lstm_parameters": count(lstm._contextualizer),
        "allennlp_lstm": f"{dense.num_layers} layers x {hidden} hidden (stacked torch LSTM), "
        "sampled softmax with 8192 samples",
        "hardware": machine,
    }
    return throughput_figures(runs, setup)


def throughput_figures(runs: Dict[str, List[float]], setup: Dict[str, Any]):
    """lm.json's throughput keys from tokens/s per round (`runs[model]`) and the set-up."""
    median = {name: statistics.median(rates) for name, rates in runs.items()}
    return {
        **{f"tokens_per_sec_{name}": round(rate, 1) for name, rate in median.items()},
        "throughput_note": (
            "Median over interleaved rounds, one torch thread (load averages under "
            "throughput_setup.hardware): absolute numbers depend on the load, the ratio is "
            "measured in one run."
        ),
        "throughput_ratio_dense_over_allennlp_lstm": round(
            median["dense"] / median["allennlp_lstm"], 3
        ),
        "throughput_runs_tokens_per_sec": {n: [round(x, 1) for x in v] for n, v in runs.items()},
        "throughput_setup": setup,
    }
