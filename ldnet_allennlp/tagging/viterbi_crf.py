"""
`BatchedViterbiCrf`: AllenNLP's `ConditionalRandomField` whose `viterbi_tags` decodes the whole
batch at once with `ldnet_allennlp.tagging.viterbi` (same tags and scores as AllenNLP's own).
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

    It adds no state, so an existing `ConditionalRandomField` becomes one in place
    (`BatchedViterbiCrf.adopt(crf)`), with no new parameters and no random numbers drawn.
    """

    @classmethod
    def adopt(cls, crf: ConditionalRandomField) -> "BatchedViterbiCrf":
        """Turn `crf`, exactly a `ConditionalRandomField`, into a `BatchedViterbiCrf` in place."""
        if type(crf) is not ConditionalRandomField:
            raise TypeError(f"expected a ConditionalRandomField, got {type(crf).__name__}")
        crf.__class__ = cls
        return crf  # type: ignore[return-value]

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
