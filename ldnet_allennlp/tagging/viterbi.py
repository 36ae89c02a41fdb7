"""
Batched constrained Viterbi decoding: the tags and scores of AllenNLP's
`ConditionalRandomField.viterbi_tags` (`top_k` None or 1), computed with tensor operations over
the whole batch instead of one `allennlp.nn.util.viterbi_decode` call per sentence.

Exactly AllenNLP's result, ties and degenerate inputs included, because the same numbers are
computed in the same order:

- the same augmented problem: `num_tags + 2` states (START = `num_tags`, END = `num_tags + 1`),
  a transition matrix filled with AllenNLP's "impossible" -10000 (`viterbi_transitions`), emission
  rows with -10000 in the START and END columns, a first step from a row that is 0 at START and
  -10000 elsewhere, and a last step into a row that is 0 at END and -10000 elsewhere;
- the same float operations in the default dtype (`(previous score + transition)`, maximised over
  the previous state, `+ emission`), so every score is bitwise AllenNLP's;
- the same choice among equal scores: AllenNLP picks the best previous state (and the best last
  state) with `torch.topk(k=1)`, not `max`. On CPU, `topk` does not return the first maximal
  index: its kernel (`aten/src/ATen/native/TopKImpl.h`) runs `std::nth_element` over
  `(value, index)` pairs, `std::partial_sort` from 64 states up, and returns whichever of the
  equal pairs that leaves in front (with 5 equal scores, index 2). So `topk(k=1)` is used here
  too, over the same values in the same order in each slice, and picks the same index. This is
  tested on CPU. On CUDA both call CUDA's `topk`, on differently laid out tensors; whether ties
  then resolve alike is not tested.
- masks need not be prefixes: like AllenNLP, each sentence is decoded over its masked positions
  only, in order.

The time loop is a Python loop over positions (Viterbi is sequential); each step is one tensor
operation set over every sentence of the batch. Sentences shorter than the longest keep their
scores frozen (and identity back-pointers) once they end.
"""

import functools
from typing import List, NamedTuple, Optional, Tuple

import torch

IMPOSSIBLE = -10000.0
"""AllenNLP's score of a forbidden transition or tag in `ConditionalRandomField.viterbi_tags`."""


def viterbi_transitions(
    transitions: torch.Tensor,
    constraint_mask: torch.Tensor,
    start_transitions: Optional[torch.Tensor] = None,
    end_transitions: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """
    The `(num_tags + 2, num_tags + 2)` transition scores that AllenNLP's
    `ConditionalRandomField.viterbi_tags` decodes with, bitwise:

    - `transitions`: `(num_tags, num_tags)`, `[i, j]` scores tag i followed by tag j;
    - `constraint_mask`: `(num_tags + 2, num_tags + 2)` of 0/1, 1 where a transition is allowed
      (START = row `num_tags`, END = column `num_tags + 1`);
    - `start_transitions`, `end_transitions`: `(num_tags,)` each, or both `None` when the CRF has
      no start/end transitions (`include_start_end_transitions=False`).

    AllenNLP computes `score * allowed + -10000 * (1 - allowed)` on the tag block, START's row
    and END's column (with no start/end transitions, `-10000 * (1 - allowed)` there) and -10000
    everywhere else. Here the same expression runs once on the whole matrix: the scores are
    scattered into it (-0.0 for absent start/end transitions, as `-0.0 + x` is exactly `x`, -0.0
    included), and `allowed` is 0 outside the three regions, which gives -10000 there.
    """
    num_tags = transitions.size(0)
    dtype = torch.get_default_dtype()  # AllenNLP's `torch.full(...)`
    layout = _layout(num_tags, transitions.device, dtype)
    if start_transitions is not None and end_transitions is not None:
        start_end = [start_transitions.detach().to(dtype), end_transitions.detach().to(dtype)]
    else:
        start_end = [layout.negative_zeros]
    values = torch.cat([transitions.detach().to(dtype).reshape(-1), *start_end, layout.zero])
    allowed = constraint_mask.detach().to(dtype) * layout.regions
    return torch.addcmul(IMPOSSIBLE * (1 - allowed), values[layout.slots], allowed)


class _Layout(NamedTuple):
    slots: torch.Tensor
    regions: torch.Tensor
    negative_zeros: torch.Tensor
    zero: torch.Tensor


@functools.lru_cache(maxsize=None)
def _layout(num_tags: int, device: torch.device, dtype: torch.dtype) -> _Layout:
    """
    Constants for `viterbi_transitions`: `slots` `(num_tags + 2, num_tags + 2)`, the index of
    each entry in `[transitions.flatten(); start (num_tags); end (num_tags); 0]`; `regions`, 1 on
    the tag block, START's row and END's column (their real-tag parts) and 0 elsewhere;
    `2 * num_tags` -0.0s (the absent start and end transitions) and a 0 (`(1,)`).
    """
    states = num_tags + 2
    start_tag, end_tag = num_tags, num_tags + 1
    square = num_tags * num_tags
    slots = torch.full((states, states), square + 2 * num_tags, dtype=torch.long)
    regions = torch.zeros(states, states, dtype=dtype)
    tags = torch.arange(num_tags)
    slots[:num_tags, :num_tags] = tags.unsqueeze(1) * num_tags + tags
    slots[start_tag, :num_tags] = square + tags
    slots[:num_tags, end_tag] = square + num_tags + tags
    regions[:num_tags, :num_tags] = 1.0
    regions[start_tag, :num_tags] = 1.0
    regions[:num_tags, end_tag] = 1.0
    return _Layout(
        slots=slots.to(device),
        regions=regions.to(device),
        negative_zeros=torch.full((2 * num_tags,), -0.0, dtype=dtype, device=device),
        zero=torch.zeros(1, dtype=dtype, device=device),
    )


@torch.no_grad()
def batched_viterbi(
    emissions: torch.Tensor,
    mask: Optional[torch.Tensor],
    transitions: torch.Tensor,
) -> Tuple[torch.Tensor, List[int], torch.Tensor]:
    """
    Viterbi decoding of a batch.

    - `emissions`: `(batch, max_len, num_tags)`, the CRF's logits;
    - `mask`: `(batch, max_len)`, true at the positions to decode (`None`: all); a sentence is its
      masked positions in order, as in AllenNLP (they need not be a prefix);
    - `transitions`: `(num_tags + 2, num_tags + 2)` from `viterbi_transitions`.

    Returns `(tags, lengths, scores)`: `tags` `(batch, L)` long, where `L` is the longest length
    and row b's first `lengths[b]` entries are sentence b's tags (the rest is padding); `lengths`,
    a list of `batch` ints; `scores` `(batch,)` in `transitions`' dtype, the best path's score (as
    AllenNLP's, it includes the START and END transitions and the -10000 of any forbidden one).
    A tag is a real tag index `< num_tags` except on inputs where every path is forbidden, where,
    as AllenNLP's, it may be the START or END state.
    """
    batch, max_len, num_tags = emissions.shape
    states = num_tags + 2
    device = emissions.device
    dtype = transitions.dtype
    constants = _rows(num_tags, device, dtype)

    if mask is None:
        lengths = [max_len] * batch
    else:
        mask = mask.bool()
        length_tensor = mask.sum(dim=1)
        lengths = length_tensor.tolist()
        if min(lengths, default=max_len) < max_len:
            prefix = torch.arange(max_len, device=device) < length_tensor.unsqueeze(1)
            if not torch.equal(prefix, mask):
                # The masked positions first, in order (a stable sort puts true before false).
                order = torch.argsort((~mask).to(torch.uint8), dim=1, stable=True)
                emissions = emissions.gather(1, order.unsqueeze(2).expand(-1, -1, num_tags))
    longest = max(lengths, default=0)
    shortest = min(lengths, default=0)

    # Scores are kept as rows, (batch, 1, states): [b, 0, j] is the best score of a path that
    # ends in state j at the current position. A step adds the transitions to them as a column,
    # (batch, states, 1) + (states, states), and maximises over the previous state (dim 1).
    # Emission rows, (batch, 1, states) per position: -10000 at START and END.
    rows = torch.nn.functional.pad(emissions[:, :longest].to(dtype), (0, 2), value=IMPOSSIBLE)
    rows = rows.unsqueeze(2).unbind(1)
    if shortest < longest:  # (batch, 1, 1) per position: has the sentence not ended yet?
        lengths_column = torch.tensor(lengths, device=device).unsqueeze(1)
        running = (torch.arange(longest, device=device) < lengths_column).view(batch, longest, 1, 1)
        running = running.unbind(1)

    scores = constants.first.expand(batch, 1, states)
    back_pointers: List[torch.Tensor] = []  # [p]: (batch, 1, states), state at p -> at p - 1
    for position in range(longest):
        best, pointers = torch.topk(scores.transpose(1, 2) + transitions, k=1, dim=1)
        new_scores = rows[position] + best
        if position >= shortest:  # ended sentences keep their scores
            new_scores = torch.where(running[position], new_scores, scores)
            pointers = torch.where(running[position], pointers, constants.identity)
        scores = new_scores
        back_pointers.append(pointers)

    best, pointers = torch.topk(scores.transpose(1, 2) + transitions, k=1, dim=1)
    final_scores, state = torch.topk(constants.last + best, k=1, dim=2)  # (batch, 1, 1)
    path = []
    for position in range(longest - 1, -1, -1):
        state = pointers.gather(2, state)  # the state at `position`
        path.append(state)
        pointers = back_pointers[position]
    if path:
        path.reverse()
        tags = torch.cat(path, dim=2).view(batch, longest)
    else:
        tags = torch.zeros((batch, 0), dtype=torch.long, device=device)
    return tags, lengths, final_scores.view(batch)


class _Rows(NamedTuple):
    first: torch.Tensor
    last: torch.Tensor
    identity: torch.Tensor


@functools.lru_cache(maxsize=None)
def _rows(num_tags: int, device: torch.device, dtype: torch.dtype) -> _Rows:
    """
    Constants for `batched_viterbi`, `(1, 1, num_tags + 2)` each: AllenNLP's first row (0 at
    START, -10000 elsewhere), its last row (0 at END) and the identity back-pointers.
    """
    states = num_tags + 2
    first = torch.full((1, 1, states), IMPOSSIBLE, dtype=dtype)
    first[..., num_tags] = 0.0
    last = torch.full((1, 1, states), IMPOSSIBLE, dtype=dtype)
    last[..., num_tags + 1] = 0.0
    identity = torch.arange(states).view(1, 1, states)
    return _Rows(first.to(device), last.to(device), identity.to(device))


def viterbi_tags(
    emissions: torch.Tensor,
    mask: Optional[torch.Tensor],
    transitions: torch.Tensor,
) -> List[Tuple[List[int], float]]:
    """
    `batched_viterbi` in the format of AllenNLP's `ConditionalRandomField.viterbi_tags` with
    `top_k=None`: one `(tags, score)` per sentence, `tags` a list of ints and `score` a float.
    Shapes as in `batched_viterbi`.
    """
    tags, lengths, scores = batched_viterbi(emissions, mask, transitions)
    return [
        (row[:length], score) for row, length, score in zip(tags.tolist(), lengths, scores.tolist())
    ]
