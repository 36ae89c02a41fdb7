"""
`ldnet_allennlp.tagging.viterbi` against AllenNLP's `ConditionalRandomField.viterbi_tags`: the
same tags and the same scores (bitwise: the decoder computes the same numbers in the same order)
on random emissions, transitions, constraints, start/end transitions and masks (hypothesis,
derandomized: the same examples on every run), ties included.
"""

from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from allennlp.modules.conditional_random_field import ConditionalRandomField, allowed_transitions

from ldnet_allennlp.tagging.viterbi import batched_viterbi, viterbi_tags, viterbi_transitions

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def allennlp_transitions(crf: ConditionalRandomField) -> torch.Tensor:
    """The lines of AllenNLP 2.10.1's `ConditionalRandomField.viterbi_tags` that build them."""
    num_tags = crf.num_tags
    start_tag = num_tags
    end_tag = num_tags + 1
    transitions = torch.full((num_tags + 2, num_tags + 2), -10000.0)
    constrained_transitions = crf.transitions * crf._constraint_mask[
        :num_tags, :num_tags
    ] + -10000.0 * (1 - crf._constraint_mask[:num_tags, :num_tags])
    transitions[:num_tags, :num_tags] = constrained_transitions.data
    if crf.include_start_end_transitions:
        transitions[start_tag, :num_tags] = crf.start_transitions.detach() * crf._constraint_mask[
            start_tag, :num_tags
        ].data + -10000.0 * (1 - crf._constraint_mask[start_tag, :num_tags].detach())
        transitions[:num_tags, end_tag] = crf.end_transitions.detach() * crf._constraint_mask[
            :num_tags, end_tag
        ].data + -10000.0 * (1 - crf._constraint_mask[:num_tags, end_tag].detach())
    else:
        transitions[start_tag, :num_tags] = -10000.0 * (
            1 - crf._constraint_mask[start_tag, :num_tags].detach()
        )
        transitions[:num_tags, end_tag] = -10000.0 * (
            1 - crf._constraint_mask[:num_tags, end_tag].detach()
        )
    return transitions


def our_transitions(crf: ConditionalRandomField) -> torch.Tensor:
    if crf.include_start_end_transitions:
        return viterbi_transitions(
            crf.transitions, crf._constraint_mask, crf.start_transitions, crf.end_transitions
        )
    return viterbi_transitions(crf.transitions, crf._constraint_mask)


def ours(
    crf: ConditionalRandomField, logits: torch.Tensor, mask: Optional[torch.Tensor]
) -> List[Tuple[List[int], float]]:
    return viterbi_tags(logits, mask, our_transitions(crf))


def labels(encoding: str, types: int, order: List[int]) -> Dict[int, str]:
    """`len(order)` labels of `types` entity types, label `names[order[i]]` at index i."""
    prefixes = {"BIO": "BI", "BIOUL": "BIUL"}[encoding]
    names = ["O"] + [f"{p}-T{t}" for t in range(types) for p in prefixes]
    return {index: names[position] for index, position in enumerate(order)}


# One CRF decoding problem: (crf, logits, mask).
@st.composite
def problems(draw) -> Tuple[ConditionalRandomField, torch.Tensor, Optional[torch.Tensor]]:
    constraints_kind = draw(st.sampled_from(["none", "random", "BIO", "BIOUL"]))
    if constraints_kind in ("BIO", "BIOUL"):
        types = draw(st.integers(1, 3))
        num_tags = 1 + types * (2 if constraints_kind == "BIO" else 4)
        order = draw(st.permutations(list(range(num_tags))))
        constraints = allowed_transitions(constraints_kind, labels(constraints_kind, types, order))
    else:
        # Mostly small; sometimes 62..66 tags (66 states and up: topk sorts differently).
        num_tags = draw(st.one_of(st.integers(1, 8), st.integers(62, 66)))
        constraints = None
        if constraints_kind == "random":
            allowed = draw(arrays(np.bool_, (num_tags + 2, num_tags + 2)))
            constraints = [(int(i), int(j)) for i, j in zip(*np.nonzero(allowed))]
    crf = ConditionalRandomField(
        num_tags, constraints, include_start_end_transitions=draw(st.booleans())
    )
    # Small integers make ties everywhere; floats make them rare.
    tied = draw(st.booleans())
    elements = st.integers(-2, 2) if tied else st.floats(-4, 4, width=32)
    with torch.no_grad():
        for parameter in crf.parameters():
            if parameter.requires_grad:  # not the constraint mask
                values = draw(arrays(np.float32, tuple(parameter.shape), elements=elements))
                parameter.copy_(torch.from_numpy(values))
    batch = draw(st.integers(0, 5))
    max_len = draw(st.integers(0, 7))
    logits = torch.from_numpy(
        draw(arrays(np.float32, (batch, max_len, num_tags), elements=elements))
    )
    mask_kind = draw(st.sampled_from(["lengths", "lengths", "any", "none"]))
    if mask_kind == "none":
        mask = None
    elif mask_kind == "lengths":
        lengths = torch.tensor(
            draw(st.lists(st.integers(0, max_len), min_size=batch, max_size=batch))
        )
        mask = torch.arange(max_len).unsqueeze(0) < lengths.view(batch, 1)
    else:
        mask = torch.from_numpy(draw(arrays(np.bool_, (batch, max_len))))
    return crf, logits, mask


@PROPERTY
@given(problems())
def test_equals_allennlp_viterbi_tags(problem):
    crf, logits, mask = problem
    expected = crf.viterbi_tags(logits, mask)
    actual = ours(crf, logits, mask)
    # Equal lists: the same tags, and scores equal as floats (not only to 1e-4).
    assert actual == expected


@settings(PROPERTY, max_examples=60)
@given(problems())
def test_transitions_are_allennlps_bitwise(problem):
    crf = problem[0]
    actual = our_transitions(crf)
    expected = allennlp_transitions(crf)
    assert actual.dtype == expected.dtype
    assert torch.equal(actual, expected)
    assert torch.equal(torch.signbit(actual), torch.signbit(expected))  # -0.0 included


@pytest.mark.parametrize("num_tags, expected", [(3, [1, 1, 1, 1]), (7, [5, 5, 5, 5])])
def test_ties_are_broken_as_allennlps_topk_not_at_the_first_maximum(num_tags, expected):
    # Every path scores 0. AllenNLP chooses with torch.topk(k=1), whose CPU kernel does not
    # return the first maximal index; argmax-based decoders return [0, 0, 0, 0].
    crf = ConditionalRandomField(num_tags, None, include_start_end_transitions=False)
    torch.nn.init.zeros_(crf.transitions)
    logits = torch.zeros(2, 4, num_tags)
    assert crf.viterbi_tags(logits) == [(expected, 0.0)] * 2
    assert ours(crf, logits, None) == [(expected, 0.0)] * 2


def test_realistic_bioul_batch_with_lengths_1_to_40():
    names = ["O"] + [f"{p}-{t}" for t in ("PER", "LOC", "ORG", "MISC") for p in "BIUL"]
    crf = ConditionalRandomField(17, allowed_transitions("BIOUL", dict(enumerate(names))))
    generator = torch.Generator().manual_seed(0)
    lengths = torch.tensor([1, 40, 2, 14, 1, 7, 13, 40, 3, 25, 9, 14])
    logits = torch.randn(len(lengths), 40, 17, generator=generator) * 3
    mask = torch.arange(40).unsqueeze(0) < lengths.unsqueeze(1)
    expected = crf.viterbi_tags(logits, mask)
    assert ours(crf, logits, mask) == expected
    assert [len(tags) for tags, _ in expected] == lengths.tolist()


def test_batched_viterbi_shapes_and_padding():
    crf = ConditionalRandomField(4, None)
    logits = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    transitions = viterbi_transitions(
        crf.transitions, crf._constraint_mask, crf.start_transitions, crf.end_transitions
    )
    tags, lengths, scores = batched_viterbi(logits, mask, transitions)
    assert tags.shape == (3, 5) and tags.dtype == torch.long
    assert lengths == [3, 5, 0]
    assert scores.shape == (3,)
    expected = crf.viterbi_tags(logits, mask)
    assert [row[:n] for row, n in zip(tags.tolist(), lengths)] == [t for t, _ in expected]
    assert scores.tolist() == [s for _, s in expected]


def test_empty_batch_and_float64_logits():
    crf = ConditionalRandomField(3, None)
    assert ours(crf, torch.zeros(0, 4, 3), None) == crf.viterbi_tags(torch.zeros(0, 4, 3)) == []
    logits = torch.randn(2, 3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    assert ours(crf, logits, None) == crf.viterbi_tags(logits)
