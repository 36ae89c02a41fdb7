"""
Compatibility fixes that let AllenNLP 2.10.1 run on the torch 2.14 stack this package pins.

Each fix is small, targeted and applied once when `ldnet_allennlp` is imported
(`apply_compatibility_fixes()` is idempotent). Every fix has a test in `tests/compat_test.py`
that fails without it.

1. **Checkpoints with numpy scalars.** torch >= 2.6 loads with `weights_only=True` by default.
   AllenNLP's training-state checkpoints can hold numpy scalars (metrics, scheduler state), so
   `allennlp train --recover` fails with an `UnpicklingError`. We keep `weights_only=True`
   (it refuses arbitrary pickled objects) and only allow-list numpy's scalar reconstructor and
   the numeric dtype classes.
2. **`reduce_on_plateau`.** torch >= 2.7 removed `ReduceLROnPlateau(verbose=...)`, which
   AllenNLP's scheduler always passes. We re-register `reduce_on_plateau` with a subclass that
   accepts (and ignores, with the same meaning as before: no printing) `verbose`.
3. **`torch.cuda.amp` deprecation.** AllenNLP's trainer calls `torch.cuda.amp.autocast(...)`
   every batch, which emits a `FutureWarning` a user cannot act on. We point the trainer at
   `torch.amp` with `device_type="cuda"`, which is the same function without the warning.
4. **Exact `--recover`.** AllenNLP's resume after a kill is not exact (no random state in its
   checkpoints, validation shuffles not replayed, a checkpoint cut short by the kill makes
   `--recover` fail); `ldnet_allennlp.resume` says why and how it is fixed (tested by killing
   real `allennlp train` processes in `tests/resume/`).
5. **RNN input sizes.** torch 2.14's LSTM/GRU/RNN given a packed batch of equal-length sequences
   does not check the input width, so an encoder with a wrong `input_size` trained on garbage;
   `ldnet_allennlp.rnn_input_check` makes AllenNLP's RNN wrappers raise a `ConfigurationError`
   naming `input_size` at the first batch (tested in `tests/bad_input/`).
6. **A quiet `--recover`.** `allennlp train --recover` reloads the run's vocabulary and saves it
   back into the same folder, and AllenNLP warns that "vocabulary serialization directory ... is
   not empty": nothing for a user to do. We drop exactly that warning when the folder is a
   serialization directory's `vocabulary/` (its parent holds the run's `config.json`, which is
   only so when resuming: a fresh run's folder is empty and `-f` deletes it).
"""

import logging
import os
from typing import List, Union

import numpy
import torch
from torch.optim import Optimizer

from allennlp.training import gradient_descent_trainer
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)

from ldnet_allennlp.resume import enable_exact_resume
from ldnet_allennlp.rnn_input_check import check_rnn_input_sizes


def numpy_checkpoint_globals() -> list:
    """The numpy objects a pickled numpy scalar needs: its reconstructor and its dtype."""
    numeric_dtypes = [
        numpy.dtypes.BoolDType,
        numpy.dtypes.Int8DType,
        numpy.dtypes.Int16DType,
        numpy.dtypes.Int32DType,
        numpy.dtypes.Int64DType,
        numpy.dtypes.UInt8DType,
        numpy.dtypes.UInt16DType,
        numpy.dtypes.UInt32DType,
        numpy.dtypes.UInt64DType,
        numpy.dtypes.Float16DType,
        numpy.dtypes.Float32DType,
        numpy.dtypes.Float64DType,
    ]
    return [numpy._core.multiarray.scalar, numpy.dtype] + numeric_dtypes


def allow_numpy_scalars_in_checkpoints() -> None:
    torch.serialization.add_safe_globals(numpy_checkpoint_globals())


@LearningRateScheduler.register("reduce_on_plateau", exist_ok=True)
class ReduceOnPlateauLearningRateScheduler(_PyTorchLearningRateSchedulerWithMetricsWrapper):
    """
    AllenNLP's `reduce_on_plateau` scheduler with the same config keys, minus the `verbose`
    argument that torch no longer accepts (it is accepted here and ignored).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, List[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        super().__init__(lr_scheduler)


class _CudaAmp:
    """`torch.cuda.amp`'s autocast and GradScaler, through the non-deprecated `torch.amp`."""

    @staticmethod
    def autocast(enabled: bool = True, **kwargs):
        return torch.amp.autocast("cuda", enabled=enabled, **kwargs)

    @staticmethod
    def GradScaler(**kwargs):  # noqa: N802 (mirrors torch's name)
        return torch.amp.GradScaler("cuda", **kwargs)


def use_torch_amp_in_trainer() -> None:
    gradient_descent_trainer.amp = _CudaAmp


class _RecoveredVocabularyFilter(logging.Filter):
    """Drops the "vocabulary serialization directory ... is not empty" warning of a resume."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("vocabulary serialization directory"):
            return True
        directory = str(record.args[0]) if record.args else ""
        resuming = os.path.basename(os.path.normpath(directory)) == "vocabulary" and os.path.exists(
            os.path.join(os.path.dirname(os.path.normpath(directory)), "config.json")
        )
        return not resuming


def quiet_vocabulary_resave_on_recover() -> None:
    vocabulary_logger = logging.getLogger("allennlp.data.vocabulary")
    if not any(isinstance(f, _RecoveredVocabularyFilter) for f in vocabulary_logger.filters):
        vocabulary_logger.addFilter(_RecoveredVocabularyFilter())


def apply_compatibility_fixes() -> None:
    allow_numpy_scalars_in_checkpoints()
    use_torch_amp_in_trainer()
    enable_exact_resume()
    check_rnn_input_sizes()
    quiet_vocabulary_resave_on_recover()
