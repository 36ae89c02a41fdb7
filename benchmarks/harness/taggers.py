"""
A tagger archive as the speed studies time it: the model and its input batches, indexed before
any timing (tokenisation and indexing are not timed), and one forward pass over them.
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
    """`sentences` as `model`'s input tensors by `reader`'s indexers, in batches of `batch_size`:
    the keyword arguments of one `model(**tensors)` call per batch."""
    from allennlp.data import Batch, Token

    instances = [reader.text_to_instance([Token(word) for word in words]) for words in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    batches = []
    for start in range(0, len(instances), batch_size):
        batch = Batch(instances[start : start + batch_size])
        batch.index_instances(model.vocab)
        tensors = batch.as_tensor_dict()
        batches.append({k: v for k, v in tensors.items() if k not in ("tags", "metadata")})
    return batches


def forward_seconds(model: Any, batches: List[Dict[str, Any]]) -> float:
    """Wall seconds of `model`'s forward over every batch, under `torch.no_grad()`."""
    import torch

    start = time.perf_counter()
    with torch.no_grad():
        for tensors in batches:
            model(**tensors)
    return time.perf_counter() - start
