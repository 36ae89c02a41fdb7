"""
Constrained Viterbi decoding in numpy: the tags of `ldnet_allennlp.tagging.viterbi` (and so of
AllenNLP's `ConditionalRandomField.viterbi_tags`, `top_k` None or 1) without torch, ties
included.

The same numbers are computed in the same order as there (float32 throughout):

- the augmented problem of `num_tags + 2` states (START = `num_tags`, END = `num_tags + 1`) with
  the `(num_tags + 2, num_tags + 2)` transition matrix that `viterbi_transitions(...)` computes,
  stored by `allennlp ldnet-export` in `crf.json` (`viterbi_transitions`), so it is read, not
  recomputed; emission rows with -10000 at START and END; a first row that is 0 at START and
  -10000 elsewhere, a last row that is 0 at END and -10000 elsewhere;
- each step `best[j] = max_i(score[i] + transitions[i, j])`, then `score = emission + best`.

The whole batch is decoded at once, as the torch decoder does it (`tagging/viterbi.py`): one set
of array operations per position over every sentence, an ended sentence keeping its scores
(frozen) with identity back-pointers, then one back-tracking pass over the positions; no Python
runs per token. A batch of one sentence (batch 1, what a server sees) takes a path with fewer
array operations per position (`_one_sentence`).

The choice among equal candidates is torch's `topk(k=1)` on CPU, which both decoders use, and
which does not take the first maximum: `topk_index` replays its selection (`std::nth_element`
over `(value, index)` pairs below 64 candidates, `std::partial_sort` from 64 up; see its
docstring). Each step keeps numpy's first maximum; after back-tracking, every choice on every
best path is checked at once (is its maximum shared, or NaN?), and only a sentence with such a
choice is back-tracked again, one step at a time, with `topk_index` where the maximum is shared.
The paths agree up to the first shared maximum met from the end, so every other sentence's path
is torch's. The scores do not depend on which of equal candidates is chosen.

Sentences are decoded over their first `lengths[b]` positions (AllenNLP's masks from a tagger's
text field are prefixes).
"""

from typing import List, Sequence

import numpy as np

IMPOSSIBLE = -10000.0
"""AllenNLP's score of a forbidden transition or tag."""

PARTIAL_SORT_FROM = 64
"""torch's CPU `topk(k)` uses `std::partial_sort` when `k * 64 <= n`, else `std::nth_element`."""


def viterbi_tags(
    emissions: np.ndarray, lengths: Sequence[int], transitions: np.ndarray
) -> List[List[int]]:
    """
    The best tag sequence of each sentence of a batch.

    # Parameters

    emissions : `np.ndarray`
        `(batch, max_len, num_tags)` float32, the CRF's logits.
    lengths : `Sequence[int]`
        `(batch,)`: sentence b is positions `[0, lengths[b])`.
    transitions : `np.ndarray`
        `(num_tags + 2, num_tags + 2)` float32, `crf.json`'s `viterbi_transitions`.

    # Returns

    `List[List[int]]`
        One list of `lengths[b]` tag indices per sentence (as AllenNLP's, on inputs where every
        path is forbidden a tag may be the START or END state).
    """
    batch, max_len, num_tags = emissions.shape
    states = num_tags + 2
    if transitions.shape != (states, states):
        raise ValueError(
            f"transitions of shape {transitions.shape} do not fit {num_tags} tags "
            f"(expected {(states, states)})"
        )
    if batch == 1:  # a batch of one, what a server sees: no array of lengths
        (length,) = lengths
        if not 0 <= length <= max_len:
            raise ValueError(f"lengths {[length]} out of range for {max_len} positions")
        return [_one_sentence(emissions[0, :length], transitions) if length else []]
    lengths = np.asarray(lengths, dtype=np.int64).reshape(batch)
    if batch and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(f"lengths {lengths.tolist()} out of range for {max_len} positions")
    longest = int(lengths.max()) if batch else 0
    if longest == 0:
        return [[] for _ in range(batch)]
    if bool((lengths[:-1] <= lengths[1:]).all()):  # a `Tagger` batch is in length order
        return _decode_in_length_order(emissions, lengths, transitions, longest)
    order = np.argsort(lengths, kind="stable")  # the passes below take the shortest first
    results = _decode_in_length_order(emissions[order], lengths[order], transitions, longest)
    unsorted: List[List[int]] = [[] for _ in range(batch)]
    for position, b in enumerate(order.tolist()):
        unsorted[b] = results[position]
    return unsorted


def _decode_in_length_order(
    emissions: np.ndarray, lengths: np.ndarray, transitions: np.ndarray, longest: int
) -> List[List[int]]:
    """`viterbi_tags` of a batch whose `lengths` do not decrease."""
    dtype = transitions.dtype
    batch, _, num_tags = emissions.shape
    states = num_tags + 2
    # running[p]: the first sentence still running at position p (those before it have ended)
    running = np.searchsorted(lengths, np.arange(longest + 1), side="right").tolist()
    history = _forward(emissions, running, transitions, longest)
    last = np.full(states, IMPOSSIBLE, dtype=dtype)
    last[num_tags + 1] = 0.0
    totals = last + (history[longest].T[:, :, None] + transitions[:, None, :]).max(axis=0)
    state = totals.argmax(axis=1)
    # Back-tracking: step k's back-pointer of the state it leads to (`state`, at position k, or
    # END for k = longest) is the first maximum of its candidates `history[k] + transitions[:,
    # state]`; path[:, k - 1] the state at position k - 1. An ended sentence's steps past its
    # end keep its state (the torch decoder's identity back-pointers): only the sentences still
    # running at step k (and every sentence at the step into END) take a new state.
    path = np.empty((batch, longest), dtype=np.intp)
    candidates = np.empty((longest, batch, states), dtype=dtype)
    columns = np.ascontiguousarray(transitions.T)  # columns[j]: transitions[:, j]
    for step in range(longest, 0, -1):
        first = 0 if step == longest else running[step]
        column = candidates[step - 1, first:]
        np.add(history[step, first:], columns[state[first:]], out=column)
        state[first:] = column.argmax(axis=1)
        path[:, step - 1] = state
    # the choices of the steps that are a sentence's own (candidates past a sentence's end are
    # not computed)
    real = np.arange(1, longest + 1)[:, None] < lengths[None, :]
    real[longest - 1] = True  # the last step (into END) is every sentence's
    chosen = np.take_along_axis(candidates, path.T[:, :, None], axis=2)
    shared = ((candidates == chosen).sum(axis=2) != 1) & real  # shared or NaN maxima
    tied = shared.any(axis=0) | _tied_totals(totals)
    tags = path.tolist()
    results = [tags[b][: int(lengths[b])] for b in range(batch)]
    for b in np.flatnonzero(tied & (lengths > 0)).tolist():
        results[b] = _replayed_path(history, transitions, totals[b], b, int(lengths[b]), longest)
    return results


def _one_sentence(emissions: np.ndarray, transitions: np.ndarray) -> List[int]:
    """
    The path of one sentence (`emissions` `(length, num_tags)`, length >= 1), with three array
    operations per position and nothing else in the loop: each step's candidates
    `score[i] + transitions[i, j]` (kept, `[k, i, j]`), their maximum over i, and that maximum
    added into the next row, which holds the position's emissions (with the START and END
    states' scores) until then; one more step into the last row (0 at END, IMPOSSIBLE
    elsewhere) gives the totals. Then, at once for every step, which candidates are the maximum:
    the back-pointers are the first of them, and back-tracking is a walk over Python lists; a
    choice on the path whose maximum is shared (or one of several NaNs, or a NaN column's) is
    then found in one count over the path's columns, and the path replayed (`_replayed_path`).
    """
    dtype = transitions.dtype
    length, num_tags = emissions.shape
    states = num_tags + 2
    # history[p]: the scores before position p (row 0 START's), then the totals (row length + 1)
    history = np.empty((length + 2, states), dtype=dtype)
    history[0] = IMPOSSIBLE
    history[0, num_tags] = 0.0
    history[1:-1, :num_tags] = emissions
    history[1:, num_tags:] = IMPOSSIBLE
    history[-1, : num_tags + 1] = IMPOSSIBLE
    history[-1, num_tags + 1] = 0.0
    steps = np.empty((length + 1, states, states), dtype=dtype)
    maxima = np.empty((length + 1, states), dtype=dtype)
    add, maximum = np.add, np.maximum.reduce
    # (positional `out`s: no keywords parsed per call); `score` a column `(states, 1)`
    rows = zip(history[:, :, None], steps, maxima, history[1:])
    for score, step, best, scores_after in rows:
        add(score, transitions, step)
        add(scores_after, maximum(step, 0, None, best), scores_after)
    totals = history[-1]
    state = int(totals.argmax())
    chosen = steps == maxima[:, None, :]  # [k, i, j]: i gives step k's maximum into j
    pointers = chosen.argmax(axis=1).tolist()
    path = [0] * length
    into = [0] * length  # the state each step on the path leads to
    for step_index in range(length, 0, -1):
        into[step_index - 1] = state
        path[step_index - 1] = state = pointers[step_index][state]
    shared = (chosen[np.arange(1, length + 1), :, into].sum(axis=1) != 1).any()
    if not shared and (totals == totals.max()).sum() == 1:
        return path
    return _replayed_path(history[:-1, None, :], transitions, totals, 0, length, length)


def _forward(
    emissions: np.ndarray, running: List[int], transitions: np.ndarray, longest: int
) -> np.ndarray:
    """
    The forward pass over a batch in length order, one set of array operations per position
    over the sentences still running (`running[p]`: the first of them at position p; an ended
    sentence's scores are carried over, frozen): `history` `(longest + 1, batch, states)`,
    `history[p]` the scores before position p, and `history[longest]` each sentence's scores
    after its last position.
    """
    dtype = transitions.dtype
    batch, _, num_tags = emissions.shape
    states = num_tags + 2
    rows = np.full((longest, batch, states), IMPOSSIBLE, dtype=dtype)
    rows[:, :, :num_tags] = emissions[:, :longest].transpose(1, 0, 2)
    history = np.empty((longest + 1, batch, states), dtype=dtype)
    history[0] = IMPOSSIBLE
    history[0][:, num_tags] = 0.0
    # step[i, b, j]: the score of state i before the position, then state j; the maximum over
    # the outer axis i is an elementwise maximum of `states` slabs
    step = np.empty((states, batch, states), dtype=dtype)
    best = np.empty((batch, states), dtype=dtype)
    beside = transitions[:, None, :]
    for position in range(longest):
        first = running[position]
        before, after = history[position], history[position + 1]
        after[:first] = before[:first]
        candidates = step[:, first:]
        np.add(before[first:].T[:, :, None], beside, out=candidates)
        np.add(
            rows[position, first:],
            np.maximum.reduce(candidates, 0, None, best[first:]),
            after[first:],
        )
    return history


def _tied_totals(totals: np.ndarray) -> np.ndarray:
    """`(batch,)`: whether the best last state is shared (or NaN)."""
    return (totals == totals.max(axis=1, keepdims=True)).sum(axis=1) != 1


def _replayed_path(
    history: np.ndarray,
    transitions: np.ndarray,
    totals: np.ndarray,
    b: int,
    length: int,
    longest: int,
) -> List[int]:
    """
    Sentence b's path with torch's choice at every step: numpy's first maximum where it is
    unique, else `topk_index` on the candidates (the scores do not depend on the choice).
    """
    state = _select(totals)
    path = []
    # the last step's pointers give the state at length - 1; position p's, the state at p - 1
    for step in [longest] + list(range(length - 1, 0, -1)):
        state = _select(history[step][b] + transitions[:, state])
        path.append(state)
    path.reverse()
    return path


def _select(values: np.ndarray) -> int:
    """`topk_index(values)`, through numpy when the maximum is unique."""
    best = values.max()
    if (values == best).sum() == 1:
        return int(values.argmax())
    return topk_index(values)


def topk_index(values: Sequence[float]) -> int:
    """
    The index that `torch.topk(torch.tensor(values), k=1)` returns on CPU, for float values.

    torch's CPU kernel (`aten/src/ATen/native/TopKImpl.h`, torch 2.x) copies the slice into a
    vector of `(value, index)` pairs and, with the comparator "NaN first, then greater value"
    (which looks at the values only), runs `std::partial_sort(begin, begin + 1, end)` when
    `64 <= n` and `std::nth_element(begin, begin, end)` otherwise; the answer is the pair left in
    front. The steps of libstdc++'s two algorithms are replayed here on the same pairs, so equal
    values resolve to the same index (with 5 equal values, index 2).
    """
    queue = [(float(value), index) for index, value in enumerate(values)]
    if not queue:
        raise ValueError("topk_index of no values")
    if len(queue) >= PARTIAL_SORT_FROM:
        _heap_select_first(queue, 0, len(queue))
    else:
        _introselect_first(queue, len(queue))
    return queue[0][1]


def _greater(x: float, y: float) -> bool:
    """torch's `largest` comparator: NaN before any number, then the greater value."""
    return (x != x and y == y) or x > y


def _heap_select_first(queue: list, first: int, last: int) -> None:
    """`std::__heap_select(first, first + 1, last)`: a heap of one, replaced by greater ones."""
    for i in range(first + 1, last):
        if _greater(queue[i][0], queue[first][0]):
            queue[first], queue[i] = queue[i], queue[first]


def _introselect_first(queue: list, size: int) -> None:
    """
    libstdc++'s `std::__introselect(begin, nth=begin, end, 2 * floor(log2(size)))`. As `nth`
    is the first element, every cut lies after it, so the range always starts at 0.
    """
    first, last = 0, size
    depth_limit = 2 * (size.bit_length() - 1)
    while last - first > 3:
        if depth_limit == 0:
            _heap_select_first(queue, first, last)
            return
        depth_limit -= 1
        last = _unguarded_partition_pivot(queue, first, last)
    _insertion_sort(queue, first, last)


def _unguarded_partition_pivot(queue: list, first: int, last: int) -> int:
    middle = first + (last - first) // 2
    _move_median_to_first(queue, first, first + 1, middle, last - 1)
    return _unguarded_partition(queue, first + 1, last, first)


def _move_median_to_first(queue: list, result: int, a: int, b: int, c: int) -> None:
    def comp(i: int, j: int) -> bool:
        return _greater(queue[i][0], queue[j][0])

    if comp(a, b):
        if comp(b, c):
            chosen = b
        elif comp(a, c):
            chosen = c
        else:
            chosen = a
    elif comp(a, c):
        chosen = a
    elif comp(b, c):
        chosen = c
    else:
        chosen = b
    queue[result], queue[chosen] = queue[chosen], queue[result]


def _unguarded_partition(queue: list, first: int, last: int, pivot: int) -> int:
    pivot_value = queue[pivot][0]
    while True:
        while _greater(queue[first][0], pivot_value):
            first += 1
        last -= 1
        while _greater(pivot_value, queue[last][0]):
            last -= 1
        if not first < last:
            return first
        queue[first], queue[last] = queue[last], queue[first]
        first += 1


def _insertion_sort(queue: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        value = queue[i]
        if _greater(value[0], queue[first][0]):
            queue[first + 1 : i + 1] = queue[first:i]
            queue[first] = value
        else:
            j = i - 1
            while _greater(value[0], queue[j][0]):
                queue[j + 1] = queue[j]
                j -= 1
            queue[j + 1] = value
