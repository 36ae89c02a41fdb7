"""`PredictionWorker`: one thread, waiting requests tagged together, each given its own outputs."""

import threading
from concurrent.futures import CancelledError

import pytest

from ldnet_allennlp.serving.worker import PredictionWorker


class RecordingPredictor:
    """Echoes each input as `{"echo": input}`; the first call waits until `release` is set."""

    def __init__(self) -> None:
        self.calls = []
        self.threads = set()
        self.started = threading.Event()
        self.release = threading.Event()

    def predict_batch_json(self, inputs):
        self.threads.add(threading.get_ident())
        self.calls.append(list(inputs))
        self.started.set()
        self.release.wait(10)
        if any(item.get("fail") for item in inputs):
            raise RuntimeError("this input fails")
        return [{"echo": item} for item in inputs]


def test_waiting_requests_are_tagged_in_one_batch_and_each_gets_its_own_outputs():
    predictor = RecordingPredictor()
    worker = PredictionWorker(predictor.predict_batch_json, max_batch=5)
    first = worker.submit([{"i": 0}])
    assert predictor.started.wait(10)  # the worker is busy with the first request
    waiting = [worker.submit([{"i": i}, {"i": i, "second": True}]) for i in range(1, 5)]
    predictor.release.set()
    assert first.result(10) == [{"echo": {"i": 0}}]
    for i, future in enumerate(waiting, start=1):
        assert future.result(10) == [{"echo": {"i": i}}, {"echo": {"i": i, "second": True}}]
    # 1 request alone, then up to max_batch (5) sentences: 3 requests (6 sentences), then 1
    assert [len(call) for call in predictor.calls] == [1, 6, 2]
    assert len(predictor.threads) == 1 and threading.get_ident() not in predictor.threads
    worker.close()
    assert not worker.alive()
    with pytest.raises(RuntimeError, match="stopped"):
        worker.submit([{"i": 9}]).result(1)


def test_a_failing_request_fails_alone_and_the_worker_goes_on():
    predictor = RecordingPredictor()
    worker = PredictionWorker(predictor.predict_batch_json, max_batch=8)
    blocker = worker.submit([{"i": 0}])
    assert predictor.started.wait(10)
    good, bad = worker.submit([{"i": 1}]), worker.submit([{"fail": True}])
    cancelled = worker.submit([{"i": 2}])
    assert cancelled.cancel()  # its client went away: it is never tagged
    predictor.release.set()
    assert blocker.result(10) == [{"echo": {"i": 0}}]
    assert good.result(10) == [{"echo": {"i": 1}}]
    with pytest.raises(RuntimeError, match="this input fails"):
        bad.result(10)
    with pytest.raises(CancelledError):
        cancelled.result(0)
    assert {"i": 2} not in [item for call in predictor.calls for item in call]
    assert worker.submit([{"i": 3}]).result(10) == [{"echo": {"i": 3}}]
    worker.close()
