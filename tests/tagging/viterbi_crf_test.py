"""
`BatchedViterbiCrf`: AllenNLP's `ConditionalRandomField` with the batched decoder; the same
outputs (and output formats) for `top_k` None, 1 and more, the same parameters and state dict.
"""

import pytest
import torch

from allennlp.modules.conditional_random_field import (
    ConditionalRandomField,
    ConditionalRandomFieldWeightEmission,
    allowed_transitions,
)

from ldnet_allennlp.tagging.viterbi_crf import BatchedViterbiCrf

NAMES = ["O"] + [f"{p}-{t}" for t in ("PER", "LOC") for p in "BIUL"]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def twins(constrained: bool, include_start_end_transitions: bool):
    """An AllenNLP CRF with random weights and a `BatchedViterbiCrf` copy of it."""
    constraints = allowed_transitions("BIOUL", dict(enumerate(NAMES))) if constrained else None
    reference = ConditionalRandomField(len(NAMES), constraints, include_start_end_transitions)
    batched = ConditionalRandomField(len(NAMES), constraints, include_start_end_transitions)
    batched.load_state_dict(reference.state_dict())
    return reference, BatchedViterbiCrf.copy_of(batched)


def batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([1, 6, 3, 6, 2])
    logits = torch.randn(5, 6, len(NAMES), generator=generator) * 3
    mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)
    return logits, mask


@pytest.mark.parametrize("constrained", [True, False])
@pytest.mark.parametrize("include_start_end_transitions", [True, False])
@pytest.mark.parametrize("top_k", [None, 1, 2, 3])
def test_same_output_as_allennlp(constrained, include_start_end_transitions, top_k):
    reference, batched = twins(constrained, include_start_end_transitions)
    for seed in range(3):
        logits, mask = batch(seed)
        expected = reference.viterbi_tags(logits, mask, top_k=top_k)
        assert batched.viterbi_tags(logits, mask, top_k=top_k) == expected
        assert batched.viterbi_tags(logits, None, top_k=top_k) == reference.viterbi_tags(
            logits, None, top_k=top_k
        )


def test_output_formats():
    _, crf = twins(True, True)
    logits, mask = batch(0)
    flat = crf.viterbi_tags(logits, mask)  # top_k=None: (tags, score) per sentence
    assert [type(tags) for tags, _ in flat] == [list] * 5
    assert all(type(score) is float for _, score in flat)
    assert all(type(tag) is int for tags, _ in flat for tag in tags)
    assert [len(tags) for tags, _ in flat] == [1, 6, 3, 6, 2]
    # top_k=1, as allennlp-models' CrfTagger calls it: [(tags, score)] per sentence.
    assert crf.viterbi_tags(logits, mask, top_k=1) == [[path] for path in flat]


@pytest.mark.parametrize("constrained", [True, False])
def test_copy_of_keeps_parameters_and_draws_no_random_numbers(constrained):
    constraints = allowed_transitions("BIOUL", dict(enumerate(NAMES))) if constrained else None
    crf = ConditionalRandomField(len(NAMES), constraints, True)
    rng_state = torch.random.get_rng_state()
    copy = BatchedViterbiCrf.copy_of(crf)
    assert torch.equal(torch.random.get_rng_state(), rng_state)
    assert isinstance(copy, BatchedViterbiCrf) and isinstance(copy, ConditionalRandomField)
    assert list(copy.state_dict()) == list(crf.state_dict())
    assert all(torch.equal(copy.state_dict()[k], v) for k, v in crf.state_dict().items())
    assert [p.requires_grad for p in copy.parameters()] == [
        p.requires_grad for p in crf.parameters()
    ]


def test_copy_of_refuses_weighted_crfs():
    with pytest.raises(TypeError, match="ConditionalRandomFieldWeightEmission"):
        BatchedViterbiCrf.copy_of(ConditionalRandomFieldWeightEmission(3, [1.0, 2.0, 1.0]))


@pytest.mark.parametrize("include_start_end_transitions", [True, False])
def test_log_likelihood_and_its_gradients_are_allennlps(include_start_end_transitions):
    reference, batched = twins(False, include_start_end_transitions)
    for seed in range(3):
        logits, mask = batch(seed)
        tags = torch.randint(len(NAMES), mask.shape, generator=torch.Generator().manual_seed(seed))
        for each_mask in (mask, None):
            values, grads = [], []
            for crf in (reference, batched):
                crf.zero_grad()
                inputs = logits.clone().requires_grad_(True)
                likelihood = crf(inputs, tags, each_mask)
                likelihood.backward()
                values.append(likelihood.detach())
                grads.append([inputs.grad] + [p.grad for p in crf.parameters() if p.requires_grad])
            assert torch.allclose(values[0], values[1], rtol=1e-6, atol=1e-5)
            for expected, got in zip(*grads):
                assert torch.allclose(expected, got, rtol=1e-5, atol=1e-5)
    assert values[0] < -1.0  # a real log-likelihood, not a degenerate 0
