"""
The pipeline of the distillation-shaped studies (`distillation`, `pruned_students`, and
`transfer_set` for the labelling step alone): teacher -> transfer set -> students -> dev -> test
-> speed. A `Pipeline` runs the steps of one run directory, each skipped when its outputs are
there (an interrupted `allennlp train` continues) and its wall time kept once
(`harness.runs.timed_once`); `speed` times models by `harness.timing.interleaved`.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from benchmarks.harness import allennlp
from benchmarks.harness.runs import timed_once
from benchmarks.harness.timing import Timings, interleaved

Batches = List[Dict[str, Any]]  # the keyword arguments of one `model(**tensors)` call per batch


@dataclass
class Pipeline:
    """The steps of one run directory; each `allennlp` command appends to `log`, runs with
    `threads` OMP/MKL threads and `env` (data paths; never a test file before `test`)."""

    run_dir: Path
    log: Path
    threads: int = 1
    env: Dict[str, str] = field(default_factory=dict)
    on_step: Optional[Callable[[], None]] = None  # called after each step (to save the results)
    seconds: Dict[str, float] = field(default_factory=dict)  # each step's wall time, once done

    def step(self, name: str, work: Callable[[], bool]) -> bool:
        """Runs `work` (which returns whether it did anything), keeps its wall seconds once (in
        `seconds`, and `stage_seconds.json` for later runs); returns whether it did anything."""
        done: List[bool] = []
        seconds = timed_once(self.run_dir, name, lambda: done.append(bool(work())) or done[0])
        if seconds is not None:
            self.seconds[name] = seconds
        if self.on_step is not None:
            self.on_step()
        return done[0]

    def train(
        self,
        name: str,
        config: Union[str, Path],
        out: Path,
        overrides: Optional[Dict[str, Any]] = None,
        env: Optional[Dict[str, str]] = None,
    ) -> bool:
        """`allennlp train config -s out` (a teacher or a student), unless it finished there."""
        arguments = (config, out, self.log, overrides, {**self.env, **(env or {})}, self.threads)
        return self.step(name, lambda: allennlp.train(*arguments))

    def label(self, name: str, arguments: List[str], output: Path) -> bool:
        """`allennlp <arguments>`, the teacher labelling the transfer set `output`; once (a
        `.done` file beside it marks it finished). Returns whether it labelled now."""

        def work() -> bool:
            done = output.with_suffix(".done")
            if done.exists():
                return False
            output.parent.mkdir(parents=True, exist_ok=True)
            allennlp.run_allennlp(arguments, self.log, self.env, threads=self.threads)
            done.write_text("done\n")
            return True

        return self.step(name, work)

    def test(self, name: str, archives: Mapping[str, Path], data: str) -> Dict[str, Any]:
        """The metrics of each archive on the test `data`, evaluated once, after every choice
        (`test_metrics.json` beside the archive)."""
        outputs = {key: Path(path).parent / "test_metrics.json" for key, path in archives.items()}
        missing = [key for key, output in outputs.items() if not output.exists()]

        def work() -> bool:
            for key in missing:
                arguments = (archives[key], data, outputs[key], self.log)
                allennlp.evaluate(*arguments, env=self.env, threads=self.threads)
            return bool(missing)

        self.step(name, work)
        return {key: json.loads(output.read_text()) for key, output in outputs.items()}


def forward(models: Sequence[Tuple[Any, Batches]]) -> Callable[[], None]:
    """One timing case: each model's forward over its batches, one after the other."""

    def run() -> None:
        for model, batches in models:
            for tensors in batches:
                model(**tensors)

    return run


def speed(
    cases: Mapping[str, Callable[[], Any]], work: Mapping[str, float], rounds: int, threads: int
) -> Tuple[Dict[str, float], Timings]:
    """
    Work per second (`work[case]`: sentences, words or rows of one call) of each case, CPU,
    torch.inference_mode, one process: a warm-up round, then `rounds` interleaved rounds at
    `threads` torch threads, the median round. Returns the rates and the `Timings`.
    """
    import torch

    with torch.inference_mode():
        timings = interleaved(cases, rounds=rounds, threads=threads)
    return {name: timings.rate(name, work[name]) for name in cases}, timings
