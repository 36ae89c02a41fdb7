"""
Exact `allennlp train --recover` after a kill, also in the middle of an epoch.

AllenNLP 2.10.1 resumes from its newest checkpoint by re-reading the training data loader up to
it without training on the batches (so that the loader's shuffles are drawn again), but:

1. it does not re-read the *validation* loader, whose shuffles draw from the same python
   `random` (AllenNLP reuses `data_loader`, e.g. `"shuffle": true` or a bucket sampler, for
   validation unless `validation_data_loader` is given), so every later shuffle differs;
2. it saves no random state, so dropout (torch's generator) draws other masks;
3. it names the newest checkpoint by its `model_state_e*_b*.th` file alone, so a process killed
   while writing a checkpoint leaves one that `--recover` fails on;
4. its "every N batches" checkpoint count restarts from 0, so the resumed run checkpoints at
   other batches than an uninterrupted one;
5. it writes `best.th` right after an epoch's checkpoint, which therefore does not know that its
   epoch was the best: resumed from it, a run forgets `best.th` (e.g. killed in epoch 1, it
   ends with the last epoch's weights instead of the best, which `evaluate_on_test` then uses).

Measured on fixtures (`allennlp train` SIGKILLed mid-epoch, then `--recover`; tests/training/),
final weights vs an uninterrupted run: up to 0.019 apart for the dense LM config, 0.0026 for
the LD-Net tagger, 0.07 for pruning masks; `--recover` after a kill while writing a checkpoint
failed (`EOFError`). Two pieces fix all five:

- `ExactResumeCallback` (`"exact_resume"`, this module), which
  `ldnet_allennlp.patches.default_callbacks` adds to AllenNLP's default trainer callbacks,
  saves with every checkpoint the random generators (python, numpy, torch CPU and CUDA), where
  training was, and which epochs validated. On `--recover` it also re-reads the validation
  loader after each skipped epoch that validated, sets the saved generators back at exactly the
  checkpoint's batch, and, resuming from an epoch's checkpoint, redoes that epoch's `best.th`.
- `ldnet_allennlp.patches.checkpointer_load_checkpoint`: `--recover` deletes an incomplete
  checkpoint (a file missing or not a complete torch archive) with a warning, resumes from the
  one before, and continues the interrupted run's checkpoint schedule.

Still not exact (AllenNLP keeps them in local variables): the `training_*` metrics of the epoch
the run was resumed in cover only the batches trained after the resume (the loss is their sum
divided by all batches of the epoch). The weights, validation metrics and best epoch are
exact, as is everything in later epochs. Draws from python's `random` outside the data loaders
(e.g. in a model's `forward`) are not replayed: a warning says so when it happens. Under
`"distributed"` only the primary writes checkpoints, so every worker resumes with the primary's
generators.
"""

import logging
import os
import random
from typing import Any, Dict, Iterator, List, Optional

import numpy
import torch

from allennlp.data import TensorDict
from allennlp.data.data_loaders import DataLoader
from allennlp.training.callbacks import TrainerCallback

logger = logging.getLogger(__name__)


def get_random_state() -> Dict[str, Any]:
    """
    Python's, numpy's (global) and torch's (CPU) generators, and every CUDA device's once CUDA
    is in use, as `weights_only`-loadable data.
    """
    numpy_state = numpy.random.get_state(legacy=False)
    numpy_state["state"]["key"] = numpy_state["state"]["key"].tolist()
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_random_state(state: Dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy_state = dict(state["numpy"], state=dict(state["numpy"]["state"]))
    numpy_state["state"]["key"] = numpy.array(numpy_state["state"]["key"], dtype=numpy.uint32)
    numpy.random.set_state(numpy_state)
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@TrainerCallback.register("exact_resume")
class ExactResumeCallback(TrainerCallback):
    """
    Makes `--recover` continue exactly where the checkpoint was taken (see the module's
    docstring). A default trainer callback once `ldnet_allennlp` is imported
    (`ldnet_allennlp.patches.default_callbacks`); with `"enable_default_callbacks": false`, list
    `"exact_resume"` in `trainer.callbacks`.
    No config keys.
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._trainer = None
        self._validated_epochs: List[int] = []
        self._resume_from: Optional[Dict[str, Any]] = None

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._trainer = trainer
        if self._resume_from:
            if self._resume_from["batches_in_epoch_completed"] == 0:
                self._save_best_after_epoch_end_checkpoint(trainer, is_primary)
            trainer.data_loader = _ReplayToCheckpoint(trainer, self._resume_from)
            self._resume_from = None

    def _save_best_after_epoch_end_checkpoint(self, trainer, is_primary: bool) -> None:
        """
        AllenNLP writes `best.th` (and records its name) right *after* an epoch's checkpoint, so
        when that epoch was the best, a run resumed from the checkpoint does not know of
        `best.th` (and ends with the last epoch's weights instead of the best), and a kill
        between the two leaves `best.th` stale. Does that step again, from the checkpoint.
        """
        last_epoch = self._resume_from["epochs_completed"] - 1
        if last_epoch not in self._validated_epochs or not trainer._metric_tracker.is_best_so_far():
            return
        wrapped = trainer._ddp_wrapped_model
        if wrapped is not None and wrapped.is_sharded:
            return  # AllenNLP gathers sharded best states at the end; not handled here
        path = os.path.join(trainer._serialization_dir, "best.th")
        if is_primary:
            moving_average = trainer._moving_average
            if moving_average is not None:
                moving_average.assign_average_value()
            try:
                trainer._save_model_state(path)
            finally:
                if moving_average is not None:
                    moving_average.restore()
        trainer._best_model_filename = path

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        # the metric tracker counts the epochs that validated
        if trainer._metric_tracker._epoch_number > len(self._validated_epochs):
            self._validated_epochs.append(epoch)

    def state_dict(self) -> Dict[str, Any]:
        if self._trainer is None:
            return {}
        return {
            "epochs_completed": self._trainer._epochs_completed,
            "batches_in_epoch_completed": self._trainer._batches_in_epoch_completed,
            "validated_epochs": list(self._validated_epochs),
            "random_state": get_random_state(),
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._validated_epochs = list(state_dict.get("validated_epochs", []))
        self._resume_from = state_dict or None


class _ReplayToCheckpoint(DataLoader):
    """
    Stands in for the trainer's data loader while a resumed run re-reads it up to the
    checkpoint: re-reads the validation loader after each skipped epoch that validated, sets the
    checkpoint's random state right before the first batch after the checkpoint is read, then
    steps aside.
    """

    def __init__(self, trainer, checkpoint: Dict[str, Any]) -> None:
        self._trainer = trainer
        self._data_loader = trainer.data_loader
        self._epoch = checkpoint["epochs_completed"]
        groups = checkpoint["batches_in_epoch_completed"]
        self._batches = groups * getattr(trainer, "_num_gradient_accumulation_steps", 1)
        self._validated_epochs = set(checkpoint["validated_epochs"])
        self._random_state = checkpoint["random_state"]
        self._epochs_read = 0

    def __len__(self) -> int:
        return len(self._data_loader)

    def __iter__(self) -> Iterator[TensorDict]:
        epoch = self._epochs_read
        self._epochs_read += 1
        if epoch < self._epoch:
            return self._skipped_epoch(epoch)
        if epoch > self._epoch:  # not reached: the state is set back in epoch `self._epoch`
            return iter(self._data_loader)
        if self._batches == 0:  # the checkpoint was taken at the end of the previous epoch
            self._restore()
            return iter(self._data_loader)
        return self._restore_after(iter(self._data_loader))

    def _skipped_epoch(self, epoch: int) -> Iterator[TensorDict]:
        yield from self._data_loader
        validation_data_loader = self._trainer._validation_data_loader
        if epoch in self._validated_epochs and validation_data_loader is not None:
            for _ in validation_data_loader:
                pass

    def _restore_after(self, batches: Iterator[TensorDict]) -> Iterator[TensorDict]:
        number = 0
        for batch in batches:
            yield batch
            number += 1
            if number == self._batches:
                self._restore()
        if number < self._batches:  # the checkpoint followed a last, short group of batches
            self._restore()

    def _restore(self) -> None:
        if random.getstate() != self._random_state["python"]:
            logger.warning(
                "--recover: python's random generator is not where the checkpoint left it after "
                "re-reading the data up to it: something besides the data loaders draws from it, "
                "so this resumed run may see the data in another order than an uninterrupted one."
            )
        set_random_state(self._random_state)
        self._trainer.data_loader = self._data_loader

    def iter_instances(self):
        return self._data_loader.iter_instances()

    def index_with(self, vocab) -> None:
        self._data_loader.index_with(vocab)

    def set_target_device(self, device: torch.device) -> None:
        self._data_loader.set_target_device(device)
