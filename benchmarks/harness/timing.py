"""
The timing protocol of every speed figure, in one place:

1. threads set explicitly: `set_threads` (torch, and the BLAS pools numpy and spaCy use) in this
   process, `thread_env` (OMP/MKL_NUM_THREADS) for a subprocess;
2. a warm-up first, not counted: a round of the cases themselves, or calls of their own;
3. at least `MIN_ROUNDS` rounds, each calling every case once (interleaved, so that load from
   other processes on a shared CPU hits every case alike), in a fixed or alternating order;
4. per case the median and the spread (min, max) over rounds, and ratios of two cases taken
   from the same run.

A case is a callable (`interleaved` says how it is timed); one piece of work that is not repeated
(a training run) is timed by `wall_clock`, never by a study's clock.

    with using_threads(1), torch.inference_mode():
        timings = interleaved({"teacher": teacher_pass, "student": student_pass}, rounds=5)
    words_per_sec = timings.rate("student", words)
    speedup = timings.ratio("teacher", "student")   # seconds: teacher / student
"""

import contextlib
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

MIN_ROUNDS = 5  # a speed figure is the median of at least this many interleaved rounds

Order = Union[None, str, Callable[[int], Sequence[str]]]


def thread_env(threads: int, base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """`base` (default: this process's environment) with OMP/MKL_NUM_THREADS set to `threads`,
    for a subprocess."""
    environment = dict(os.environ if base is None else base)
    environment.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return environment


def set_threads(threads: int) -> None:
    """torch's intra-op threads, and the BLAS threads numpy (and spaCy's thinc) use, to
    `threads`, in this process."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    assert torch.get_num_threads() == threads
    threadpool_limits(threads)


@contextlib.contextmanager
def using_threads(count: int) -> Iterator[None]:
    """`set_threads(count)` for the `with` block; torch's thread count is restored after it."""
    import torch

    before = torch.get_num_threads()
    set_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class Timings:
    """
    The counted samples of an `interleaved` run: `samples[case]` holds one measurement per round,
    in round order (seconds per call, or what a self-timed case returned). Warm-up calls are not
    in it. A sample may be a dict (e.g. seconds per component); `field` then picks one entry
    (a missing entry counts 0.0).
    """

    samples: Dict[str, List[Any]]
    rounds: int
    orders: List[List[str]] = field(default_factory=list)

    def values(self, case: str, field: Optional[str] = None) -> List[float]:
        """The samples of `case` (or their `field`), in round order."""
        samples = self.samples[case]
        return list(samples) if field is None else [s.get(field, 0.0) for s in samples]

    def median(self, case: str, field: Optional[str] = None) -> float:
        return statistics.median(self.values(case, field))

    def spread(self, case: str, field: Optional[str] = None) -> Tuple[float, float]:
        """(min, max) over rounds."""
        values = self.values(case, field)
        return min(values), max(values)

    def rate(self, case: str, work: float) -> float:
        """`work` (words, sentences, tokens) per second of the median round, for timed cases."""
        return work / self.median(case)

    def ratio(self, numerator: str, denominator: str, field: Optional[str] = None) -> float:
        """median(numerator) / median(denominator): both from this same run."""
        return self.median(numerator, field) / self.median(denominator, field)


def round_order(order: Order, names: Sequence[str], round_index: int) -> List[str]:
    """The cases of round `round_index` (0 = first counted round): `order` None keeps `names`,
    "alternate" reverses them in odd rounds, a callable is asked."""
    if order is None:
        return list(names)
    if order == "alternate":
        return list(names) if round_index % 2 == 0 else list(reversed(names))
    if callable(order):
        return list(order(round_index))
    raise ValueError(f"order: None, 'alternate' or a callable, not {order!r}")


def interleaved(
    cases: Mapping[str, Callable[..., Any]],
    rounds: int,
    warmup: Union[int, Mapping[str, Callable[[], Any]]] = 1,
    order: Order = None,
    threads: Optional[int] = None,
    self_timed: bool = False,
    pass_round: bool = False,
    clock: Callable[[], float] = time.perf_counter,
    on_round: Optional[Callable[[int, Dict[str, Any]], None]] = None,
) -> Timings:
    """
    Times `cases` (name -> callable; the mapping's order is the order within a round) by the
    protocol of this module, and returns the counted samples and each round's order.

    `rounds` counted rounds (at least `MIN_ROUNDS`) follow `warmup`: an int is that many
    uncounted rounds of the cases themselves (round index -1 with `pass_round`), a mapping is
    calls of their own, once each (e.g. on less data). `order` sets each round's order
    (`round_order`); `threads`, if given, is set for the run (`using_threads`). A case is timed
    with `clock` (seconds per call), or with `self_timed` returns its own measurement (a rate,
    seconds read from a subprocess, a dict of component seconds), stored as is; with
    `pass_round` it gets the round index. `on_round(index, {case: sample})` is called after each
    counted round.
    """
    if rounds < MIN_ROUNDS:
        raise ValueError(
            f"at least {MIN_ROUNDS} timed rounds (the median is reported), not {rounds}"
        )

    def call(name: str, round_index: int) -> Any:
        start = clock()
        returned = cases[name](round_index) if pass_round else cases[name]()
        return returned if self_timed else clock() - start

    with contextlib.nullcontext() if threads is None else using_threads(threads):
        if isinstance(warmup, Mapping):
            for run in warmup.values():
                run()
        else:
            for name in [name for _ in range(warmup) for name in cases]:
                cases[name](-1) if pass_round else cases[name]()
        timings = Timings({name: [] for name in cases}, rounds)
        for round_index in range(rounds):
            timings.orders.append(round_order(order, list(cases), round_index))
            latest = {}
            for name in timings.orders[-1]:
                latest[name] = call(name, round_index)
                timings.samples[name].append(latest[name])
            if on_round is not None:
                on_round(round_index, latest)
    return timings


def printed_rounds(label: str, show: Callable[[Any], str]) -> Callable[[int, Dict[str, Any]], None]:
    """An `on_round` for `interleaved`: prints each counted round's samples (each as `show`
    gives it) after `label`."""

    def on_round(round_index: int, latest: Dict[str, Any]) -> None:
        shown = ", ".join(f"{case} {show(sample)}" for case, sample in latest.items())
        print(f"{label}, round {round_index + 1}: {shown}", flush=True)

    return on_round


@contextlib.contextmanager
def wall_clock(record: Callable[[float], Any], clock: Callable[[], float] = time.perf_counter):
    """Calls `record` with the wall seconds of the `with` block, also when the block fails: the
    time of one piece of work that is not repeated (a training run), not a speed figure."""
    start = clock()
    try:
        yield
    finally:
        record(clock() - start)
