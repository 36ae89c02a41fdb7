import itertools

import pytest
import torch

from allennlp.modules.conditional_random_field import ConditionalRandomField

from ldnet_allennlp.tagging.crf_marginals import crf_log_marginals, crf_marginals


def brute_force_marginals(crf, logits, length):
    """p(y_t = k | x) of one sentence by enumerating every tag sequence of `length`."""
    num_tags = logits.shape[-1]
    scores, paths = [], []
    for path in itertools.product(range(num_tags), repeat=length):
        score = sum(logits[t, tag] for t, tag in enumerate(path))
        score = score + sum(crf.transitions[a, b] for a, b in zip(path, path[1:]))
        if crf.include_start_end_transitions:
            score = score + crf.start_transitions[path[0]] + crf.end_transitions[path[-1]]
        scores.append(score)
        paths.append(path)
    probabilities = torch.softmax(torch.stack(scores), dim=0)
    marginals = torch.zeros(length, num_tags, dtype=logits.dtype)
    for probability, path in zip(probabilities, paths):
        for t, tag in enumerate(path):
            marginals[t, tag] += probability
    return marginals


@pytest.mark.parametrize("start_end", [True, False])
def test_marginals_equal_enumeration_over_every_tag_sequence(start_end):
    torch.manual_seed(0)
    crf = ConditionalRandomField(3, include_start_end_transitions=start_end).double()
    with torch.no_grad():
        for parameter in crf.parameters():
            if parameter.requires_grad:
                parameter.normal_()
    logits = torch.randn(3, 4, 3, dtype=torch.double)
    lengths = [4, 2, 1]
    mask = torch.arange(4).view(1, 4) < torch.tensor(lengths).view(3, 1)
    marginals = crf_marginals(crf, logits, mask)
    for row, length in enumerate(lengths):
        expected = brute_force_marginals(crf, logits[row], length)
        assert torch.allclose(marginals[row, :length], expected, atol=1e-10)
        assert torch.all(marginals[row, length:] == 0)


def test_marginals_are_the_gradient_of_allennlps_log_partition():
    # d log Z / d logits[t, k] = p(y_t = k | x): checks the forward-backward pass against
    # AllenNLP's own forward algorithm (ConditionalRandomField._input_likelihood)
    torch.manual_seed(1)
    crf = ConditionalRandomField(5).double()
    logits = torch.randn(2, 7, 5, dtype=torch.double, requires_grad=True)
    mask = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    log_partition = crf._input_likelihood(logits, crf.transitions, mask).sum()
    (gradient,) = torch.autograd.grad(log_partition, logits)
    marginals = crf_marginals(crf, logits.detach(), mask)
    assert torch.allclose(marginals, gradient, atol=1e-10)


def test_log_marginals_of_an_empty_batch_and_empty_sentences():
    transitions = torch.zeros(2, 2)
    assert crf_log_marginals(
        torch.zeros(3, 0, 2), torch.zeros(3, 0, dtype=torch.bool), transitions
    ).shape == (3, 0, 2)
    mask = torch.tensor([[False, False], [True, False]])
    log_marginals = crf_log_marginals(torch.zeros(2, 2, 2), mask, transitions)
    assert torch.all(log_marginals[0] == 0)
    assert torch.allclose(log_marginals[1, 0].exp(), torch.tensor([0.5, 0.5]))
