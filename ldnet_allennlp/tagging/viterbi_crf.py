"""
`BatchedViterbiCrf`: AllenNLP's `ConditionalRandomField` whose `viterbi_tags` decodes the whole
batch at once with `ldnet_allennlp.tagging.viterbi` (same tags and scores as AllenNLP's own), and
whose log-likelihood takes fewer, larger tensor operations (the same values up to float
rounding).
"""

from typing import List, Union

import torch

from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.conditional_random_field.conditional_random_field import VITERBI_DECODING

from ldnet_allennlp.tagging.viterbi import viterbi_tags, viterbi_transitions


class BatchedViterbiCrf(ConditionalRandomField):
    """
    `ConditionalRandomField` with the same parameters, state-dict keys, likelihood and outputs;
    only `viterbi_tags` with `top_k` None or 1 runs the batched decoder. Any other `top_k` runs
    AllenNLP's per-sentence decoder.

    The log-likelihood (`forward`) is AllenNLP's formula written for a GPU, where every small
    tensor operation is a kernel launch: the gold path's score is gathered for all positions at
    once, and each step of the forward algorithm is one `torch.logsumexp` and one `torch.where`
    (AllenNLP's step is about fifteen operations; its gold score loops over positions).

    It adds no state: `BatchedViterbiCrf.copy_of(crf)` turns a `ConditionalRandomField` into
    one with the same parameters, drawing no random numbers.
    """

    @classmethod
    def copy_of(cls, crf: ConditionalRandomField) -> "BatchedViterbiCrf":
        """
        A `BatchedViterbiCrf` holding `crf`'s parameters (the same state-dict keys and values,
        on the same device), made without moving the global random generators, so that a model
        that swaps its CRF for it trains on the same random numbers.
        """
        if type(crf) is not ConditionalRandomField:
            raise TypeError(f"expected a ConditionalRandomField, got {type(crf).__name__}")
        with torch.random.fork_rng(devices=[]):
            copy = cls(
                crf.num_tags, include_start_end_transitions=crf.include_start_end_transitions
            )
        copy.load_state_dict(crf.state_dict())
        return copy.to(crf.transitions.device)

    def viterbi_tags(
        self, logits: torch.Tensor, mask: torch.BoolTensor = None, top_k: int = None
    ) -> Union[List[VITERBI_DECODING], List[List[VITERBI_DECODING]]]:
        """
        As `ConditionalRandomField.viterbi_tags`: `logits` `(batch, max_len, num_tags)`, `mask`
        `(batch, max_len)`; per sentence `(tags, score)` when `top_k` is None, `[(tags, score)]`
        when it is 1, the `top_k` best when it is more.
        """
        if top_k is not None and top_k != 1:
            return super().viterbi_tags(logits, mask, top_k=top_k)
        if self.include_start_end_transitions:
            transitions = viterbi_transitions(
                self.transitions,
                self._constraint_mask,
                self.start_transitions,
                self.end_transitions,
            )
        else:
            transitions = viterbi_transitions(self.transitions, self._constraint_mask)
        best_paths = viterbi_tags(logits, mask, transitions)
        if top_k is None:
            return best_paths
        return [[best_path] for best_path in best_paths]

    def _input_likelihood(
        self, logits: torch.Tensor, transitions: torch.Tensor, mask: torch.BoolTensor
    ) -> torch.Tensor:
        """
        `log Z(x)` per sentence, `(batch_size,)`, from `logits` `(batch_size, num_tokens,
        num_tags)`, `transitions` `(num_tags, num_tags)` and `mask` `(batch_size, num_tokens)`.
        """
        num_tags = logits.size(2)
        steps = mask.transpose(0, 1).unsqueeze(2)  # (num_tokens, batch_size, 1)
        emissions = logits.transpose(0, 1)  # (num_tokens, batch_size, num_tags)
        alpha = emissions[0]
        if self.include_start_end_transitions:
            alpha = alpha + self.start_transitions.view(1, num_tags)
        transitions = transitions.unsqueeze(0)
        for i in range(1, emissions.size(0)):
            # the emission does not depend on the previous tag: added after the sum over it
            step = torch.logsumexp(alpha.unsqueeze(2) + transitions, dim=1) + emissions[i]
            alpha = torch.where(steps[i], step, alpha)
        if self.include_start_end_transitions:
            alpha = alpha + self.end_transitions.view(1, num_tags)
        return torch.logsumexp(alpha, dim=-1)

    def _joint_likelihood(
        self,
        logits: torch.Tensor,
        transitions: torch.Tensor,
        tags: torch.Tensor,
        mask: torch.BoolTensor,
    ) -> torch.Tensor:
        """
        The score of the path `tags` `(batch_size, num_tokens)` per sentence, `(batch_size,)`:
        its emissions and transitions over the real positions, plus the start and end
        transitions when the CRF has them.
        """
        weights = mask.to(logits.dtype)
        emitted = logits.gather(2, tags.unsqueeze(2)).squeeze(2)  # (batch_size, num_tokens)
        moved = transitions[tags[:, :-1], tags[:, 1:]]  # (batch_size, num_tokens - 1)
        score = (emitted * weights).sum(1) + (moved * weights[:, 1:]).sum(1)
        if self.include_start_end_transitions:
            last_tags = tags.gather(1, (mask.sum(1).long() - 1).unsqueeze(1)).squeeze(1)
            score = score + self.start_transitions[tags[:, 0]] + self.end_transitions[last_tags]
        return score
