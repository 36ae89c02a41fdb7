"""
`PredictionWorker`: the one thread that runs the predictor for every request.

AllenNLP predictors and models are not guaranteed to be thread-safe (the spaCy pipeline, the
model's metrics, torch's autograd state), so requests never call the predictor themselves: they
queue their inputs here and wait. The worker takes whatever is queued (up to `max_batch`
sentences) and tags it with one `predict_batch_json` call, so concurrent requests share a forward
pass. Each request gets exactly its own outputs back; the model masks padding, so a sentence is
tagged the same in any batch.
"""

import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, List, Optional

from allennlp.common.util import JsonDict

logger = logging.getLogger(__name__)

PredictBatch = Callable[[List[JsonDict]], List[JsonDict]]


@dataclass
class _Job:
    inputs: List[JsonDict]
    future: "Future[List[JsonDict]]"


class PredictionWorker:
    """
    The one thread that runs the predictor, tagging waiting requests together.

    # Parameters

    predict_batch : `Callable[[List[JsonDict]], List[JsonDict]]`
        The predictor's `predict_batch_json` (only ever called from this worker's thread).
    max_batch : `int`, optional (default = `32`)
        The most sentences tagged in one call when requests are waiting; a request with more is
        still tagged in one call.
    """

    def __init__(self, predict_batch: PredictBatch, max_batch: int = 32) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._predict_batch = predict_batch
        self._max_batch = max_batch
        self._queue: "queue.SimpleQueue[Optional[_Job]]" = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ldnet-serve-predictor", daemon=True)
        self._thread.start()

    def submit(self, inputs: List[JsonDict]) -> "Future[List[JsonDict]]":
        """The outputs of `inputs`, in order, once the worker has tagged them."""
        future: "Future[List[JsonDict]]" = Future()
        if not self.alive():
            future.set_exception(RuntimeError("the prediction worker has stopped"))
            return future
        self._queue.put(_Job(inputs, future))
        return future

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        """Tags what is queued, then stops the thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            job = self._queue.get()
            if job is None:
                return
            jobs, size = [job], len(job.inputs)
            while size < self._max_batch:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                    break
                jobs.append(job)
                size += len(job.inputs)
            # a request whose client has gone (its future cancelled) is not tagged
            self._tag([job for job in jobs if job.future.set_running_or_notify_cancel()])

    def _tag(self, jobs: List[_Job]) -> None:
        if not jobs:
            return
        try:
            outputs = self._predict_batch([item for job in jobs for item in job.inputs])
        except Exception as error:  # noqa: BLE001 (the request that caused it gets it)
            if len(jobs) > 1:
                # find the request that fails, so that the others still get their answers
                for job in jobs:
                    self._tag_alone(job)
                return
            jobs[0].future.set_exception(error)
            return
        start = 0
        for job in jobs:
            job.future.set_result(outputs[start : start + len(job.inputs)])
            start += len(job.inputs)

    def _tag_alone(self, job: _Job) -> None:
        try:
            job.future.set_result(self._predict_batch(job.inputs))
        except Exception as error:  # noqa: BLE001
            job.future.set_exception(error)
