"""The batched sentence boundaries against AllenNLP's per-sentence loops."""

import torch
from allennlp.nn import util

from ldnet_allennlp.modules.sentence_boundaries import (
    add_sentence_boundaries,
    remove_sentence_boundaries,
)


def _batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 0, 3, 7, 1, 5])  # full, empty, in between
    positions = torch.arange(7).unsqueeze(0)
    mask = positions < lengths.unsqueeze(1)
    ids = torch.randint(1, 50, (6, 7), generator=generator) * mask
    return ids, mask


def test_add_sentence_boundaries_is_allennlps():
    ids, mask = _batch(0)
    expected, expected_mask = util.add_sentence_boundary_token_ids(ids, mask, 51, 52)
    with_boundaries = add_sentence_boundaries(ids, 51, 52)
    assert torch.equal(with_boundaries, expected)
    assert torch.equal(with_boundaries != 0, expected_mask)
    assert with_boundaries[1].tolist()[:3] == [51, 52, 0]  # an empty sentence: <S> </S>


def test_remove_sentence_boundaries_is_allennlps_values_and_gradients():
    ids, mask = _batch(1)
    with_boundaries = add_sentence_boundaries(ids, 51, 52)
    layer = torch.randn(6, 9, 4, requires_grad=True)
    expected, expected_mask = util.remove_sentence_boundaries(layer, with_boundaries != 0)
    removed = remove_sentence_boundaries(layer, mask)
    assert torch.equal(removed, expected)
    assert torch.equal(expected_mask, mask)
    weights = torch.randn(6, 7, 4)
    (expected_grad,) = torch.autograd.grad((expected * weights).sum(), layer)
    (grad,) = torch.autograd.grad((removed * weights).sum(), layer)
    assert torch.equal(grad, expected_grad)
    assert grad[:, 0].abs().sum() == 0 and grad[0, 8].abs().sum() == 0  # <S>, </S>
