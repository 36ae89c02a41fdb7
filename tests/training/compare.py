"""Comparing a resumed training run with an uninterrupted one (see resume_test.py)."""

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import torch

# keys of metrics*.json that measure time or memory, not training
UNCOMPARED_METRIC = re.compile(r"duration|memory")


@contextlib.contextmanager
def one_torch_thread():
    """The uninterrupted runs use one thread, as the `allennlp` processes (OMP_NUM_THREADS=1)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def assert_same_training(expected_dir: Path, actual_dir: Path, interrupted_epoch: int) -> None:
    """
    The same checkpoint files, each equal (every tensor `torch.equal`, everything else `==`),
    the same `best.th`, and the same metrics in every `metrics*.json` except time and memory and
    the `training_*` metrics of the interrupted epoch (AllenNLP computes those from the batches
    trained after the resume only).
    """
    checkpoints = sorted(path.name for path in expected_dir.glob("*_state_e*_b*.th"))
    assert checkpoints  # the comparison below is not vacuous
    assert sorted(path.name for path in actual_dir.glob("*_state_e*_b*.th")) == checkpoints
    for name in checkpoints + ["best.th"]:
        expected = torch.load(expected_dir / name, map_location="cpu")
        actual = torch.load(actual_dir / name, map_location="cpu")
        assert_equal(expected, actual, where=name, dirs=(str(expected_dir), str(actual_dir)))
    metric_files = sorted(path.name for path in expected_dir.glob("metrics*.json"))
    assert sorted(path.name for path in actual_dir.glob("metrics*.json")) == metric_files
    final_epoch = json.loads((expected_dir / "metrics.json").read_text())["epoch"]
    for name in metric_files:
        expected = json.loads((expected_dir / name).read_text())
        actual = json.loads((actual_dir / name).read_text())
        epoch = final_epoch if name == "metrics.json" else int(re.search(r"\d+", name).group())
        for key in set(expected) | set(actual):
            if UNCOMPARED_METRIC.search(key):
                continue
            if epoch == interrupted_epoch and key.startswith("training_"):
                continue  # AllenNLP: only the batches trained after the resume
            assert actual.get(key) == expected.get(key), f"{name}: {key}"


def assert_equal(expected: Any, actual: Any, where: str, dirs) -> None:
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor) and torch.equal(expected, actual), (
            f"{where}: differs by up to "
            f"{(expected.double() - actual.double()).abs().max().item():.3g}"
        )
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and set(expected) == set(actual), where
        for key in expected:
            assert_equal(expected[key], actual[key], f"{where}[{key!r}]", dirs)
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected), where
        for index, (left, right) in enumerate(zip(expected, actual)):
            assert_equal(left, right, f"{where}[{index}]", dirs)
    elif isinstance(expected, str):
        # e.g. best_model_filename, a path into the serialization dir
        assert isinstance(actual, str), f"{where}: {expected!r} != {actual!r}"
        assert expected.replace(dirs[0], "<dir>") == actual.replace(dirs[1], "<dir>"), where
    else:
        assert expected == actual, f"{where}: {expected!r} != {actual!r}"
