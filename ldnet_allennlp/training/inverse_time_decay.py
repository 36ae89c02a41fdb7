"""
LD-Net's learning-rate schedule (Liu et al., 2018; the official `train_seq.py`): after epoch `e`
(0-based) the learning rate is `lr / (1 + decay · (e + 1))`, from the optimizer's `lr`.
"""

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
    LearningRateScheduler,
    _PyTorchLearningRateSchedulerWrapper,
)


class _InverseTime:
    """`epoch -> 1 / (1 + decay · epoch)`: a picklable factor for `LambdaLR`."""

    def __init__(self, decay: float) -> None:
        self.decay = decay

    def __call__(self, epoch: int) -> float:
        return 1.0 / (1.0 + self.decay * epoch)


@LearningRateScheduler.register("inverse_time_decay")
class InverseTimeDecay(_PyTorchLearningRateSchedulerWrapper):
    """
    Registered as `"inverse_time_decay"`: the learning rate of epoch `e` (0-based) is
    `lr / (1 + decay · e)`, stepped once per epoch by AllenNLP's trainer, so the first epoch runs
    at the optimizer's `lr` (LD-Net: SGD, `lr` 0.015, `decay` 0.05). Resumes with `--recover`
    (the epoch count is in the scheduler's state).

    decay : `float` (default `0.05`), >= 0.
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, decay: float = 0.05, last_epoch: int = -1
    ) -> None:
        if decay < 0:
            raise ConfigurationError(f"inverse_time_decay: decay must be >= 0, got {decay}.")
        lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lr_lambda=_InverseTime(decay), last_epoch=last_epoch
        )
        super().__init__(lr_scheduler)
