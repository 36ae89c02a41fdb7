"""
A training config's epochs and steps, timed and profiled on a CPU or a GPU, for the `gpu` study:
`run_epochs` runs the config's own trainer for a few epochs with `EpochTimer` reading the clock
at every batch (seconds per epoch; training and validation batches per second, without the
first batch of each phase, which starts the data loader); `profile_steps` takes training steps
as the trainer does under `torch.profiler`: host milliseconds, operator launches, device time and
`.item()` calls (host-device syncs on a GPU) of each part of the step.

Run as a script against whatever `ldnet_allennlp` is first on `PYTHONPATH` (the package at
another commit, for the `gpu` study's `--baseline`), it prints the figures of one CPU thread as
JSON. It then imports nothing of `benchmarks/` (that commit's harness may differ), so it reads the
clock itself.

    python COPY_OF_gpu_steps.py '{"config": PATH, "ext_vars": {...}, "overrides": {...},
                                  "work_dir": DIR, "profile_steps": N}'   # 0: time the epochs

(a copy outside benchmarks/studies/, whose `profile.py` would shadow the standard library's).
"""

import json
import shutil
import sys
import time
from collections import Counter, defaultdict
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Dict, List

import torch

from allennlp.commands.train import TrainModel
from allennlp.common import Params
from allennlp.common.params import with_overrides
from allennlp.common.plugins import import_plugins
from allennlp.nn.util import move_to_device
from allennlp.training.callbacks import TrainerCallback


@TrainerCallback.register("benchmarks_epoch_timer")
class EpochTimer(TrainerCallback):
    """Wall-clock times of each epoch's training and validation batches (`records`)."""

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self.records: List[Dict[str, float]] = []
        self._start = 0.0
        self._times: Dict[bool, List[float]] = {True: [], False: []}  # by `is_training`

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._start = _now(trainer)

    def on_batch(self, trainer, *batch, is_training: bool, **kwargs) -> None:
        self._times[bool(is_training)].append(_now(trainer))

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        end = _now(trainer)
        record = {"epoch": epoch, "seconds": end - self._start}
        for phase, times in (("train", self._times[True]), ("validation", self._times[False])):
            record[f"{phase}_batches"] = len(times)
            if len(times) > 1:
                record[f"{phase}_batches_per_sec"] = (len(times) - 1) / (times[-1] - times[0])
        self.records.append(record)
        self._start, self._times = end, {True: [], False: []}


def _now(trainer) -> float:
    if getattr(trainer, "cuda_device", torch.device("cpu")).type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def build_trainer(config: str, ext_vars: Dict, overrides: Dict, work_dir: Path, cuda_device: int):
    """The config's `TrainModel` with `overrides`, on `cuda_device`, and an `EpochTimer`."""
    import_plugins()
    params = Params.from_file(config, ext_vars=ext_vars)
    changes = {"trainer.cuda_device": cuda_device, **overrides}
    settings = with_overrides(params.as_dict(quiet=True), changes)
    timer = {"type": "benchmarks_epoch_timer"}
    settings["trainer"]["callbacks"] = list(settings["trainer"].get("callbacks", [])) + [timer]
    params = Params(settings)
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    params.to_file(str(work_dir / "config.json"))
    return TrainModel.from_params(params=params, serialization_dir=str(work_dir), local_rank=0)


def run_epochs(train_model: TrainModel) -> Dict[str, Any]:
    """Trains (no archive is written) and returns the per-epoch records and their medians."""
    train_model.run()
    records = next(c for c in train_model.trainer._callbacks if isinstance(c, EpochTimer)).records
    summary: Dict[str, Any] = {"epochs": records}
    for key in ("seconds", "train_batches_per_sec", "validation_batches_per_sec"):
        values = sorted(r[key] for r in records if key in r)
        if values:
            summary[f"median_{key}"] = values[len(values) // 2]
    return summary


# What each part of a training step is, for the profile: (label, owner, method name).
def _parts(model, trainer) -> List[tuple]:
    parts = [
        (f"embedder:{name}", embedder, "forward")
        for name, embedder in model.text_field_embedder._token_embedders.items()
    ]
    parts += [("word_bilstm", model.encoder, "forward"), ("crf_loglik", model.crf, "forward")]
    parts += [("viterbi", model.crf, "viterbi_tags"), ("metrics", model, "get_metrics")]
    parts += [("optimizer", trainer.optimizer, "step")]
    if hasattr(model, "_update_metrics"):
        parts.append(("metrics", model, "_update_metrics"))
    return parts


def profile_steps(train_model: TrainModel, steps: int, warmup: int = 3) -> Dict[str, Any]:
    """
    `steps` training steps (after `warmup` untimed ones) under `torch.profiler`: per step, the
    wall milliseconds and, by part of the step, host milliseconds, top-level operator calls and
    device milliseconds; `item_calls_per_step` counts `aten::item` / `aten::_local_scalar_dense`
    (a host-device sync when the tensor is on the GPU; the CPU's own `batch_sizes` of packed
    sequences and optimizer step counts are counted too).
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    trainer, model, device = train_model.trainer, train_model.model, train_model.trainer.cuda_device
    for label, owner, name in _parts(model, trainer):
        original = getattr(owner, name)

        def labelled(*args, _original=original, _label=label, **kwargs):
            with record_function(f"part:{_label}"):
                return _original(*args, **kwargs)

        setattr(owner, name, labelled)

    def step(batch) -> None:
        trainer.optimizer.zero_grad()
        with record_function("part:forward"):
            loss = trainer.batch_outputs(move_to_device(batch, device), for_training=True)["loss"]
        with record_function("part:backward"):
            loss.backward()
        with record_function("part:grad_clip"):
            trainer.rescale_gradients()
        trainer.optimizer.step()
        model.get_metrics(reset=False)
        loss.item()

    model.train()
    batches = chain.from_iterable(repeat(trainer.data_loader))  # epoch after epoch
    for _ in range(warmup):
        step(next(batches))
    chosen = [next(batches) for _ in range(steps)]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    start = _now(trainer)
    with profile(activities=activities) as profiler:
        for batch in chosen:
            step(batch)
    wall = (_now(trainer) - start) / steps
    return {"steps": steps, "wall_ms_per_step": 1000 * wall, **_by_part(profiler, steps)}


def _by_part(profiler, steps: int) -> Dict[str, Any]:
    operators, items = Counter(), Counter()
    host_ms: Dict[str, float] = defaultdict(float)
    device_ms: Dict[str, float] = defaultdict(float)
    for event in profiler.events():
        if event.name.startswith("part:"):
            host_ms[event.name[5:]] += event.cpu_time_total / 1000 / steps
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        if parent is not None and parent.name.startswith("aten::"):
            continue  # inside another operator: not a call of its own
        part = parent  # the part of the step: the label of the nearest "part:" ancestor
        while part is not None and not part.name.startswith("part:"):
            part = part.cpu_parent
        part = "step_rest" if part is None else part.name[5:]
        part = "forward_rest" if part == "forward" else part
        operators[part] += 1
        device_ms[part] += getattr(event, "device_time_total", 0.0) / 1000 / steps
        if event.name in ("aten::_local_scalar_dense", "aten::item"):
            items[part] += 1
    return {
        "host_ms_per_step": {k: round(v, 2) for k, v in sorted(host_ms.items())},
        "operators_per_step": {k: v / steps for k, v in operators.most_common()},
        "operators_per_step_total": sum(operators.values()) / steps,
        "device_ms_per_step": {k: round(v, 3) for k, v in device_ms.items() if v > 0},
        "item_calls_per_step": {k: v / steps for k, v in items.most_common()},
    }


def main(job: Dict[str, Any]) -> None:
    """Prints the figures of `job` (the script's argument) on one CPU thread."""
    torch.set_num_threads(1)
    import ldnet_allennlp  # noqa: F401  (whichever PYTHONPATH puts first)

    work_dir, steps = Path(job["work_dir"]), job["profile_steps"]
    train_model = build_trainer(job["config"], job["ext_vars"], job["overrides"], work_dir, -1)
    figures = profile_steps(train_model, steps) if steps else run_epochs(train_model)
    figures["ldnet_allennlp"] = str(Path(ldnet_allennlp.__file__).parent)
    print("GPU_STEPS_JSON " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
