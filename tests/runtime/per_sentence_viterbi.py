"""
The per-sentence decoder `ldnet_runtime/viterbi.py` had before the batched one (the code of
commit e731b4d, unchanged below this docstring), kept as a reference the batched decoder is
tested against. It back-tracks each sentence position by position in Python.
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
