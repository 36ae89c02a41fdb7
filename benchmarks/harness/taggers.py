"""
A tagger archive as the speed studies time it: the model and its input batches, indexed before
any timing (tokenisation and indexing are not timed), one forward pass over them, and the span
F1 of tags.
"""

import time
from pathlib import Path
from typing import Any, Dict, List, Tuple


def tensor_batches(
    archive_path: Path, sentences: List[List[str]], batch_size: int
) -> Tuple[Any, List[Dict[str, Any]]]:
    """The model of `archive_path` (in eval mode) and `sentences` as its input tensors
    (`model_batches`): the keyword arguments of one `model(**tensors)` call per batch."""
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401  (registers our readers and models for load_archive)

    archive = load_archive(str(archive_path))
    model = archive.model.eval()
    return model, model_batches(model, archive.dataset_reader, sentences, batch_size)


def model_batches(
    model: Any, reader: Any, sentences: List[List[str]], batch_size: int
) -> List[Dict[str, Any]]:
    """`sentences` as `model`'s input tensors by `reader`'s indexers (`instance_batches`, without
    the gold tags and the metadata)."""
    from allennlp.data import Token

    instances = [reader.text_to_instance([Token(word) for word in words]) for words in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instance_batches(model, instances, batch_size, leave_out=("tags", "metadata"))


def instance_batches(
    model: Any, instances: List[Any], batch_size: int, leave_out: Tuple[str, ...] = ()
) -> List[Dict[str, Any]]:
    """`instances` (indexers applied) as `model`'s input tensors in batches of `batch_size`: the
    keyword arguments of one `model(**tensors)` call per batch, the fields `leave_out` left out."""
    from allennlp.data import Batch

    batches = []
    for start in range(0, len(instances), batch_size):
        batch = Batch(instances[start : start + batch_size])
        batch.index_instances(model.vocab)
        tensors = batch.as_tensor_dict()
        batches.append({k: v for k, v in tensors.items() if k not in leave_out})
    return batches


def forward_seconds(model: Any, batches: List[Dict[str, Any]]) -> float:
    """Wall seconds of `model`'s forward over every batch, under `torch.no_grad()`."""
    import torch

    start = time.perf_counter()
    with torch.no_grad():
        for tensors in batches:
            model(**tensors)
    return time.perf_counter() - start


def span_f1(
    gold: List[List[str]], predicted: List[List[str]], encoding: str, gold_encoding: str = "IOB1"
) -> float:
    """Exact typed-span F1 (x100, as AllenNLP's `SpanBasedF1Measure`) of `predicted` (tags in
    `encoding`) against `gold` (in `gold_encoding`), sentence by sentence."""
    from ldnet_runtime.spans import SPAN_DECODERS

    correct = n_gold = n_predicted = 0
    for gold_tags, tags in zip(gold, predicted):
        gold_spans = set(SPAN_DECODERS[gold_encoding](gold_tags))
        spans = set(SPAN_DECODERS[encoding](tags))
        correct += len(gold_spans & spans)
        n_gold, n_predicted = n_gold + len(gold_spans), n_predicted + len(spans)
    precision, recall = correct / max(n_predicted, 1), correct / max(n_gold, 1)
    return 100 * 2 * precision * recall / max(precision + recall, 1e-12)
