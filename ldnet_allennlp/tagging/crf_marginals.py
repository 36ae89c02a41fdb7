"""
Posterior marginals of a linear-chain CRF, `p(y_t = k | x)`, by the forward-backward algorithm
over AllenNLP's `ConditionalRandomField` parameters: the soft targets a CRF teacher gives a
student (Tang et al.'s logits, for sequence labelling).
"""

from typing import Optional

import torch

from allennlp.modules.conditional_random_field import ConditionalRandomField


def crf_log_marginals(
    logits: torch.Tensor,
    mask: torch.BoolTensor,
    transitions: torch.Tensor,
    start_transitions: Optional[torch.Tensor] = None,
    end_transitions: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """
    Log posterior marginals of a linear-chain CRF whose score of a tag sequence `y` is
    `start[y_0] + Σ_t logits[t, y_t] + Σ_t transitions[y_(t-1), y_t] + end[y_last]`, the score
    of AllenNLP's `ConditionalRandomField` (its log-likelihood's partition function is the
    `logsumexp` of this score over all sequences).

    # Parameters

    logits : `torch.Tensor`
        `(batch_size, sequence_length, num_tags)` emissions.
    mask : `torch.BoolTensor`
        `(batch_size, sequence_length)`, each row a prefix of `True`s (a sentence may be empty).
    transitions : `torch.Tensor`
        `(num_tags, num_tags)`, `transitions[i, j]` scores tag `i` followed by tag `j`.
    start_transitions, end_transitions : `torch.Tensor`, optional
        `(num_tags,)`; left out, they count 0.

    # Returns

    `torch.Tensor`
        `(batch_size, sequence_length, num_tags)`: `log p(y_t = k | x)`. Over masked positions the
        rows are 0 (`log 1`), so that a masked sum over tags of `exp` is 1 everywhere; use `mask`
        to leave them out.
    """
    batch_size, length, num_tags = logits.shape
    if length == 0:
        return logits.new_zeros(batch_size, 0, num_tags)
    mask = mask.bool()
    lengths = mask.sum(dim=1)
    zeros = logits.new_zeros(num_tags)
    start = zeros if start_transitions is None else start_transitions
    end = zeros if end_transitions is None else end_transitions
    pairwise = transitions.view(1, num_tags, num_tags)

    # alpha[t]: log-sum of the scores of every prefix ending in tag k at t (emission t included)
    alphas = [start.view(1, num_tags) + logits[:, 0]]
    for t in range(1, length):
        step = torch.logsumexp(alphas[-1].unsqueeze(2) + pairwise, dim=1) + logits[:, t]
        keep = mask[:, t].unsqueeze(1)
        alphas.append(torch.where(keep, step, alphas[-1]))
    alpha = torch.stack(alphas, dim=1)

    # beta[t]: log-sum of the scores of every suffix after tag k at t (the end transition included)
    is_last = torch.arange(length, device=logits.device).view(1, length) == (lengths - 1).view(
        -1, 1
    )
    betas = [end.view(1, num_tags).expand(batch_size, num_tags)]
    for t in range(length - 2, -1, -1):
        following = betas[0] + logits[:, t + 1]
        step = torch.logsumexp(pairwise + following.unsqueeze(1), dim=2)
        last_here = is_last[:, t].unsqueeze(1)
        betas.insert(0, torch.where(last_here, end.view(1, num_tags).expand_as(step), step))
    beta = torch.stack(betas, dim=1)

    last_alpha = alpha.gather(1, (lengths - 1).clamp(min=0).view(-1, 1, 1).expand(-1, 1, num_tags))
    log_partition = torch.logsumexp(last_alpha.squeeze(1) + end.view(1, num_tags), dim=1)
    log_marginals = alpha + beta - log_partition.view(-1, 1, 1)
    return torch.where(mask.unsqueeze(2), log_marginals, torch.zeros_like(log_marginals))


def crf_marginals(
    crf: ConditionalRandomField, logits: torch.Tensor, mask: torch.BoolTensor
) -> torch.Tensor:
    """
    `p(y_t = k | x)` under `crf`'s own distribution, the one its log-likelihood (`crf(...)`)
    normalises: its `transitions`, and its start and end transitions when it has them. The
    Viterbi decoder's allowed-transition constraints are not applied, since the likelihood that
    trained the CRF does not apply them either.

    # Parameters

    crf : `ConditionalRandomField`
    logits : `torch.Tensor`
        `(batch_size, sequence_length, num_tags)`.
    mask : `torch.BoolTensor`
        `(batch_size, sequence_length)`.

    # Returns

    `torch.Tensor`
        `(batch_size, sequence_length, num_tags)`, rows summing to 1; masked positions are 0.
    """
    return _log_marginals_of(crf, logits, mask).exp() * mask.unsqueeze(2)


def _log_marginals_of(
    crf: ConditionalRandomField, logits: torch.Tensor, mask: torch.BoolTensor
) -> torch.Tensor:
    """`crf_log_marginals` with `crf`'s transitions (and its start/end ones when it has them)."""
    start = crf.start_transitions if crf.include_start_end_transitions else None
    end = crf.end_transitions if crf.include_start_end_transitions else None
    return crf_log_marginals(logits, mask, crf.transitions, start, end)


def crf_distillation_kl(
    crf: ConditionalRandomField,
    logits: torch.Tensor,
    mask: torch.BoolTensor,
    teacher_marginals: torch.Tensor,
) -> torch.Tensor:
    """
    `Σ_b Σ_t Σ_k q log(q / p)`: the KL divergence from a teacher's marginals `q` to `crf`'s
    posterior marginals `p` (`crf_log_marginals` under the same distribution as `crf_marginals`),
    summed over the unmasked tokens of the batch. Zero exactly when `p = q` at every token;
    differentiable in `logits` and the CRF's parameters.

    # Parameters

    crf : `ConditionalRandomField`
    logits : `torch.Tensor`
        `(batch_size, sequence_length, num_tags)`, the student's emissions.
    mask : `torch.BoolTensor`
        `(batch_size, sequence_length)`.
    teacher_marginals : `torch.Tensor`
        `(batch_size, sequence_length, num_tags)`, rows summing to 1 (in `crf`'s tag order).

    # Returns

    `torch.Tensor`
        A scalar.
    """
    log_p = _log_marginals_of(crf, logits, mask)
    q = teacher_marginals.to(log_p.dtype)
    per_tag = torch.xlogy(q, q) - q * log_p
    return (per_tag.sum(dim=2) * mask).sum()
