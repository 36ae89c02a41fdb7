"""
`ldnet_runtime.viterbi` (numpy) against `ldnet_allennlp.tagging.viterbi` (torch, itself tested
equal to AllenNLP's `ConditionalRandomField.viterbi_tags`): the same tags on random emissions,
transitions, constraints and lengths, ties included (hypothesis, derandomized); and
`topk_index` against `torch.topk(k=1)` on slices full of equal values and NaNs. The batched
decoder also against the per-sentence decoder it replaced (`per_sentence_viterbi.py`) and
AllenNLP's `ConditionalRandomField.viterbi_tags` itself, on batches of up to 40 sentences.
"""

from typing import List, Tuple

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from allennlp.modules.conditional_random_field import ConditionalRandomField, allowed_transitions

from ldnet_allennlp.tagging.viterbi import viterbi_tags as torch_viterbi_tags
from ldnet_allennlp.tagging.viterbi import viterbi_transitions
from ldnet_runtime.viterbi import topk_index, viterbi_tags
from tests.runtime.per_sentence_viterbi import viterbi_tags as per_sentence_viterbi_tags

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def transitions_of(crf: ConditionalRandomField) -> torch.Tensor:
    """What `BatchedViterbiCrf` decodes with, and `allennlp ldnet-export` stores."""
    if crf.include_start_end_transitions:
        return viterbi_transitions(
            crf.transitions, crf._constraint_mask, crf.start_transitions, crf.end_transitions
        )
    return viterbi_transitions(crf.transitions, crf._constraint_mask)


@st.composite
def problems(draw) -> Tuple[torch.Tensor, torch.Tensor, List[int]]:
    """`(transitions, logits (batch, max_len, num_tags), lengths)` of a random CRF."""
    kind = draw(st.sampled_from(["none", "random", "BIOUL"]))
    if kind == "BIOUL":
        types = draw(st.integers(1, 4))
        names = ["O"] + [f"{p}-T{t}" for t in range(types) for p in "BIUL"]
        order = draw(st.permutations(names))
        num_tags = len(names)
        constraints = allowed_transitions("BIOUL", dict(enumerate(order)))
    else:
        # mostly small; sometimes 62..66 tags (from 64 states up, topk sorts differently)
        num_tags = draw(st.one_of(st.integers(1, 8), st.integers(62, 66)))
        constraints = None
        if kind == "random":
            allowed = draw(arrays(np.bool_, (num_tags + 2, num_tags + 2)))
            constraints = [(int(i), int(j)) for i, j in zip(*np.nonzero(allowed))]
    crf = ConditionalRandomField(num_tags, constraints, draw(st.booleans()))
    # small integers make ties everywhere; floats make them rare
    elements = st.integers(-2, 2) if draw(st.booleans()) else st.floats(-4, 4, width=32)
    with torch.no_grad():
        for parameter in crf.parameters():
            values = draw(arrays(np.float32, tuple(parameter.shape), elements=elements))
            parameter.copy_(torch.from_numpy(values))
    batch = draw(st.integers(1, 5))
    max_len = draw(st.integers(1, 9))
    logits = torch.from_numpy(
        draw(arrays(np.float32, (batch, max_len, num_tags), elements=elements))
    )
    lengths = draw(st.lists(st.integers(0, max_len), min_size=batch, max_size=batch))
    return transitions_of(crf), logits, lengths


def decode_both(transitions: torch.Tensor, logits: torch.Tensor, lengths: List[int]):
    mask = torch.arange(logits.shape[1]).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    expected = [tags for tags, _ in torch_viterbi_tags(logits, mask, transitions)]
    actual = viterbi_tags(logits.numpy(), lengths, transitions.numpy())
    return actual, expected


@PROPERTY
@given(problems())
def test_same_tags_as_the_torch_decoder(problem):
    actual, expected = decode_both(*problem)
    assert actual == expected


@pytest.mark.parametrize("num_tags, expected", [(3, [1, 1, 1, 1]), (7, [5, 5, 5, 5])])
def test_all_paths_tied_resolve_as_torch_topk_not_at_the_first_maximum(num_tags, expected):
    crf = ConditionalRandomField(num_tags, None, include_start_end_transitions=False)
    torch.nn.init.zeros_(crf.transitions)
    actual, torch_tags = decode_both(transitions_of(crf), torch.zeros(2, 4, num_tags), [4, 4])
    assert actual == torch_tags == [expected, expected]


def test_realistic_bioul_batch_with_lengths_0_to_40():
    names = ["O"] + [f"{p}-{t}" for t in ("PER", "LOC", "ORG", "MISC") for p in "BIUL"]
    crf = ConditionalRandomField(17, allowed_transitions("BIOUL", dict(enumerate(names))))
    generator = torch.Generator().manual_seed(0)
    lengths = [1, 40, 2, 0, 14, 1, 7, 13, 40, 3, 25, 9, 14]
    logits = torch.randn(len(lengths), 40, 17, generator=generator) * 3
    actual, expected = decode_both(transitions_of(crf), logits, lengths)
    assert actual == expected
    assert [len(tags) for tags in actual] == lengths


@settings(PROPERTY, max_examples=400)
@given(
    st.integers(1, 80).flatmap(
        lambda n: arrays(
            np.float32,
            (n,),
            elements=st.one_of(
                st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.0, -10000.0]),
                st.just(float("nan")),
                st.floats(-3, 3, width=32),
            ),
        )
    )
)
def test_topk_index_is_torch_topk_k1(values):
    expected = int(torch.topk(torch.from_numpy(values), k=1).indices)
    assert topk_index(values.tolist()) == expected


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 17, 19, 63, 64, 65, 100])
def test_topk_index_all_equal(size):
    values = torch.zeros(size)
    assert topk_index(values.tolist()) == int(torch.topk(values, k=1).indices)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="do not fit 3 tags"):
        viterbi_tags(np.zeros((1, 2, 3), np.float32), [2], np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="out of range"):
        viterbi_tags(np.zeros((1, 2, 3), np.float32), [3], np.zeros((5, 5), np.float32))


# ------------------------------------------------------------------ the batched decoder


def allennlp_tags(crf: ConditionalRandomField, logits: torch.Tensor, lengths: List[int]):
    """AllenNLP's own `ConditionalRandomField.viterbi_tags` (one sentence at a time inside)."""
    mask = torch.arange(logits.shape[1]).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return [tags for tags, _ in crf.viterbi_tags(logits, mask)]


@st.composite
def crf_problems(draw) -> Tuple[ConditionalRandomField, torch.Tensor, List[int]]:
    """A random BIOUL or unconstrained CRF and a batch of up to 40 sentences, lengths 0-30,
    small integer scores (ties everywhere) or floats, NaNs sometimes."""
    if draw(st.booleans()):
        names = ["O"] + [f"{p}-T{t}" for t in range(draw(st.integers(1, 4))) for p in "BIUL"]
        crf = ConditionalRandomField(
            len(names), allowed_transitions("BIOUL", dict(enumerate(names))), draw(st.booleans())
        )
    else:
        crf = ConditionalRandomField(draw(st.integers(1, 8)), None, draw(st.booleans()))
    integers = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)

    def values(*shape: int) -> torch.Tensor:
        if integers:
            return torch.randint(-2, 3, shape, generator=generator).float()
        return torch.randn(shape, generator=generator) * 3

    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(values(*parameter.shape))
    batch = draw(st.integers(1, 40))
    lengths = draw(st.lists(st.integers(0, 30), min_size=batch, max_size=batch))
    logits = values(batch, max(max(lengths), 1), crf.num_tags)
    if draw(st.integers(0, 9)) == 0:
        logits[torch.rand(logits.shape, generator=generator) < 0.02] = float("nan")
    return crf, logits, lengths


@settings(PROPERTY, max_examples=200)
@given(crf_problems())
def test_the_batched_decoder_gives_the_per_sentence_decoders_and_allennlps_tags(problem):
    crf, logits, lengths = problem
    transitions = transitions_of(crf).numpy()
    actual = viterbi_tags(logits.numpy(), lengths, transitions)
    assert actual == per_sentence_viterbi_tags(logits.numpy(), lengths, transitions)
    assert actual == allennlp_tags(crf, logits, lengths)


@pytest.mark.parametrize("lengths", [[0, 1, 30, 17, 30, 2], [30], [1], [0]])
def test_the_decoder_on_all_tied_batches_is_allennlps(lengths):
    """Every score equal: every back-pointer on every path is a tie, replayed (a batch of one
    sentence takes its own path through the decoder)."""
    crf = ConditionalRandomField(5, None, include_start_end_transitions=False)
    torch.nn.init.zeros_(crf.transitions)
    logits = torch.zeros(len(lengths), max(lengths + [1]), 5)
    actual = viterbi_tags(logits.numpy(), lengths, transitions_of(crf).numpy())
    if max(lengths) > 0:  # AllenNLP's viterbi_tags takes no all-padding batch
        assert actual == allennlp_tags(crf, logits, lengths)
    assert [len(tags) for tags in actual] == lengths
