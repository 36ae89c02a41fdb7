import pytest

from benchmarks.harness.timing import (
    MIN_ROUNDS,
    Timings,
    interleaved,
    round_order,
    thread_env,
    using_threads,
    wall_clock,
)


class FakeClock:
    """Advances by the duration the running case sets, so each call 'takes' a chosen time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cases_with_durations(clock, durations, calls):
    """Cases that log their calls and advance `clock` by the next of their durations."""

    def case(name):
        def run(*args):
            calls.append((name, *args))
            clock.now += durations[name].pop(0)

        return run

    return {name: case(name) for name in durations}


def test_rounds_are_interleaved_and_the_warm_up_is_not_counted():
    clock, calls = FakeClock(), []
    durations = {
        "a": [100.0, 3.0, 1.0, 2.0, 5.0, 4.0],  # the first call is the warm-up
        "b": [200.0, 10.0, 30.0, 20.0, 40.0, 50.0],
    }
    timings = interleaved(cases_with_durations(clock, durations, calls), rounds=5, clock=clock)
    assert [name for name, *_ in calls] == ["a", "b"] * 6
    assert timings.samples == {"a": [3.0, 1.0, 2.0, 5.0, 4.0], "b": [10.0, 30.0, 20.0, 40.0, 50.0]}
    assert timings.median("a") == 3.0 and timings.spread("a") == (1.0, 5.0)
    assert timings.median("b") == 30.0 and timings.spread("b") == (10.0, 50.0)
    assert timings.ratio("b", "a") == 10.0
    assert timings.rate("a", work=600) == 200.0


def test_an_even_number_of_rounds_takes_the_mean_of_the_middle_two():
    timings = Timings({"a": [4.0, 1.0, 3.0, 2.0, 6.0, 5.0]}, rounds=6)
    assert timings.median("a") == 3.5


def test_alternating_order_and_separate_warm_up_calls():
    clock, calls = FakeClock(), []
    durations = {name: [1.0] * 5 for name in "abc"}
    warmed = []
    timings = interleaved(
        cases_with_durations(clock, durations, calls),
        rounds=5,
        warmup={"small_a": lambda: warmed.append("a"), "small_c": lambda: warmed.append("c")},
        order="alternate",
        clock=clock,
    )
    assert warmed == ["a", "c"]
    assert [name for name, *_ in calls] == list("abccbaabccbaabc")
    assert timings.orders[1] == ["c", "b", "a"]


def test_an_order_callable_and_the_round_index_passed_to_cases():
    clock, calls = FakeClock(), []
    durations = {name: [1.0] * 12 for name in ("full/x", "full/y", "enc/x", "enc/y")}

    def order(r):
        models = ["x", "y"] if r % 2 == 0 else ["y", "x"]
        return [f"{kind}/{m}" for kind in ("full", "enc") for m in models]

    interleaved(
        cases_with_durations(clock, durations, calls),
        rounds=5,
        order=order,
        pass_round=True,
        clock=clock,
    )
    assert calls[:4] == [("full/x", -1), ("full/y", -1), ("enc/x", -1), ("enc/y", -1)]
    assert calls[4:8] == [("full/x", 0), ("full/y", 0), ("enc/x", 0), ("enc/y", 0)]
    assert calls[8:12] == [("full/y", 1), ("full/x", 1), ("enc/y", 1), ("enc/x", 1)]


def test_self_timed_cases_keep_what_they_return_including_dicts():
    returned = iter([{"lm": 9.0}] + [{"lm": float(i), "crf": 1.0} for i in range(1, 6)])
    seen = []
    timings = interleaved(
        {"tagger": lambda: next(returned)},
        rounds=5,
        self_timed=True,
        on_round=lambda r, latest: seen.append((r, latest["tagger"]["lm"])),
    )
    assert timings.values("tagger", "lm") == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert timings.median("tagger", "lm") == 3.0 and timings.spread("tagger", "crf") == (1.0, 1.0)
    assert seen == [(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0), (4, 5.0)]
    sparse = Timings({"t": [{"lm": 1.0}, {"crf": 2.0}, {"lm": 3.0}]}, rounds=3)
    assert sparse.values("t", "lm") == [1.0, 0.0, 3.0]  # a component a round did not see: 0


def test_fewer_than_five_rounds_are_refused():
    assert MIN_ROUNDS == 5
    with pytest.raises(ValueError, match="at least 5"):
        interleaved({"a": lambda: None}, rounds=4)
    assert interleaved({"a": lambda: None}, rounds=5).rounds == 5


def test_threads_are_set_for_the_run_and_restored():
    import torch

    before = torch.get_num_threads()
    seen = []
    interleaved({"a": lambda: seen.append(torch.get_num_threads())}, rounds=5, threads=1)
    assert seen == [1] * 6 and torch.get_num_threads() == before
    with using_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_thread_env_for_subprocesses():
    env = thread_env(2, base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}


def test_round_order_rejects_an_unknown_order():
    assert round_order(None, ["a", "b"], 1) == ["a", "b"]
    with pytest.raises(ValueError):
        round_order("shuffle", ["a"], 0)


def test_wall_clock_records_the_blocks_seconds_also_when_it_fails():
    ticks, recorded = iter([10.0, 12.5, 20.0, 21.0]), []
    with wall_clock(recorded.append, clock=lambda: next(ticks)):
        pass
    with pytest.raises(RuntimeError):
        with wall_clock(recorded.append, clock=lambda: next(ticks)):
            raise RuntimeError("training failed")
    assert recorded == [2.5, 1.0]
