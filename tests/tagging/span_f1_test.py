import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from allennlp.data import Vocabulary
from allennlp.training.metrics import SpanBasedF1Measure

from ldnet_allennlp.tagging.metrics import DistributedSpanBasedF1Measure

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def make_vocab() -> Vocabulary:
    vocab = Vocabulary()
    for tag in TAGS:
        vocab.add_token_to_namespace(tag, "tags")
    return vocab


def make_batches():
    """Random BIO predictions and gold tags: 4 batches of (predictions, gold, mask)."""
    generator = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(4):
        gold = torch.randint(len(TAGS), (3, 9), generator=generator)
        logits = torch.randn(3, 9, len(TAGS), generator=generator)
        # Workers see different tag sets: worker 1 never predicts ORG.
        mask = torch.ones(3, 9, dtype=torch.bool)
        mask[0, 6:] = False
        batches.append((logits, gold, mask))
    return batches


def single_process_metric():
    metric = SpanBasedF1Measure(make_vocab(), "tags")
    for logits, gold, mask in make_batches():
        metric(logits, gold, mask)
    return metric.get_metric()


def test_same_as_allennlp_outside_ddp():
    ours = DistributedSpanBasedF1Measure(make_vocab(), "tags")
    for logits, gold, mask in make_batches():
        ours(logits, gold, mask)
    assert ours.get_metric() == pytest.approx(single_process_metric())


def _worker(rank: int, world_size: int, port: int, results) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    metric = DistributedSpanBasedF1Measure(make_vocab(), "tags")
    for index, (logits, gold, mask) in enumerate(make_batches()):
        if index % world_size == rank:
            if rank == 1:
                logits[..., TAGS.index("B-ORG")] = -1e9
                logits[..., TAGS.index("I-ORG")] = -1e9
            metric(logits, gold, mask)
    results[rank] = metric.get_metric()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ddp_value_equals_single_process_value():
    # The single-process reference sees the same predictions as the two workers together.
    reference = SpanBasedF1Measure(make_vocab(), "tags")
    for index, (logits, gold, mask) in enumerate(make_batches()):
        if index % 2 == 1:
            logits[..., TAGS.index("B-ORG")] = -1e9
            logits[..., TAGS.index("I-ORG")] = -1e9
        reference(logits, gold, mask)
    expected = reference.get_metric()

    results = mp.Manager().dict()
    mp.spawn(_worker, args=(2, free_port(), results), nprocs=2, join=True)
    assert results[0] == pytest.approx(expected)
    assert results[1] == pytest.approx(expected)
    assert expected["f1-measure-overall"] > 0
