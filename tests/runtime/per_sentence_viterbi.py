"""
The per-sentence decoder `ldnet_runtime/viterbi.py` had before the batched one (the code of
commit e731b4d), kept as a reference the batched decoder is tested against. It back-tracks each
sentence position by position in Python. Its tie-breaking (`_select`, `topk_index`: torch's
`topk` replayed) is the runtime's own, which `viterbi_test.py` checks against torch itself.
"""

from typing import List, Sequence

import numpy as np

from ldnet_runtime.viterbi import _select, topk_index

IMPOSSIBLE = -10000.0
"""AllenNLP's score of a forbidden transition or tag."""


def viterbi_tags(
    emissions: np.ndarray, lengths: Sequence[int], transitions: np.ndarray
) -> List[List[int]]:
    """
    The best tag sequence of each sentence of a batch.

    - `emissions`: `(batch, max_len, num_tags)` float32, the CRF's logits;
    - `lengths`: `(batch,)`, sentence b is positions `[0, lengths[b])`;
    - `transitions`: `(num_tags + 2, num_tags + 2)` float32, `crf.json`'s `viterbi_transitions`.

    Returns one list of `lengths[b]` tag indices per sentence (as AllenNLP's, on inputs where
    every path is forbidden a tag may be the START or END state).
    """
    dtype = transitions.dtype
    batch, max_len, num_tags = emissions.shape
    states = num_tags + 2
    if transitions.shape != (states, states):
        raise ValueError(
            f"transitions of shape {transitions.shape} do not fit {num_tags} tags "
            f"(expected {(states, states)})"
        )
    lengths = np.asarray(lengths, dtype=np.int64).reshape(batch)
    if batch and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(f"lengths {lengths.tolist()} out of range for {max_len} positions")
    longest = int(lengths.max()) if batch else 0
    results: List[List[int]] = [[] for _ in range(batch)]
    if longest == 0:
        return results

    rows = np.full((batch, longest, states), IMPOSSIBLE, dtype=dtype)
    rows[:, :, :num_tags] = emissions[:, :longest]
    first = np.full((batch, states), IMPOSSIBLE, dtype=dtype)
    first[:, num_tags] = 0.0
    last = np.full(states, IMPOSSIBLE, dtype=dtype)
    last[num_tags + 1] = 0.0

    # candidates[p]: (batch, states, states), [b, i, j] the score of state i before position p
    # followed by state j; best[p] and pointers[p]: (batch, states), their maximum over i and
    # the first i that reaches it. Step `longest` is each sentence's last step (into END),
    # from its own last scores.
    scores = first
    history = [first]  # history[p]: the scores before position p (after position p - 1)
    candidates, best, pointers = [], [], []
    for position in range(longest + 1):
        if position == longest:
            scores = np.stack([history[length][b] for b, length in enumerate(lengths.tolist())])
        step = scores[:, :, None] + transitions
        candidates.append(step)
        best.append(step.max(axis=1))
        pointers.append(step.argmax(axis=1))
        if position < longest:
            scores = rows[:, position] + best[-1]
            history.append(scores)

    totals = last + best[longest]  # (batch, states): the best score ending in each state
    for b in range(batch):
        length = int(lengths[b])
        if length == 0:
            continue
        state = _select(totals[b])
        path = []
        # the last step's pointers give the state at length - 1; position p's, the state at p - 1
        for step_index in [longest] + list(range(length - 1, 0, -1)):
            state = _pointer(
                candidates[step_index], best[step_index], pointers[step_index], b, state
            )
            path.append(state)
        path.reverse()
        results[b] = path
    return results


def _pointer(candidates, best, pointers, b: int, state: int) -> int:
    """
    The previous state that torch's `topk` chooses for `state` in sentence `b`: numpy's first
    maximum unless the maximum is shared (or NaN), then `topk_index` on the column.
    """
    column = candidates[b, :, state]
    if np.count_nonzero(column == best[b, state]) == 1:
        return int(pointers[b, state])
    return topk_index(column)
