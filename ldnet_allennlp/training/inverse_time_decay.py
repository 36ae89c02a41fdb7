"""
LD-Net's learning-rate schedule (Liu et al., 2018; the official `train_seq.py`): after epoch `e`
(0-based) the learning rate is `lr / (1 + decay · (e + 1))`, from the optimizer's `lr`.
"""

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.optimizers import MultiOptimizer
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

    # Parameters

    decay : `float`, optional (default = `0.05`)
        >= 0.
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, decay: float = 0.05, last_epoch: int = -1
    ) -> None:
        if decay < 0:
            raise ConfigurationError(f"inverse_time_decay: decay must be >= 0, got {decay}.")
        # AllenNLP's `multi` optimizer steps its own optimizers, whose param groups are not its
        # own: each one gets the schedule (a scheduler on the wrapper would change nothing)
        optimizers = (
            list(optimizer.optimizers.values())
            if isinstance(optimizer, MultiOptimizer)
            else [optimizer]
        )
        schedulers = [
            torch.optim.lr_scheduler.LambdaLR(
                each, lr_lambda=_InverseTime(decay), last_epoch=last_epoch
            )
            for each in optimizers
        ]
        super().__init__(schedulers[0] if len(schedulers) == 1 else _Together(schedulers))


class _Together:
    """Several torch schedulers stepped, saved and restored as one."""

    def __init__(self, schedulers) -> None:
        self.schedulers = schedulers

    def step(self) -> None:
        for scheduler in self.schedulers:
            scheduler.step()

    def get_last_lr(self):
        return [lr for scheduler in self.schedulers for lr in scheduler.get_last_lr()]

    def state_dict(self):
        return {"schedulers": [scheduler.state_dict() for scheduler in self.schedulers]}

    def load_state_dict(self, state_dict) -> None:
        for scheduler, state in zip(self.schedulers, state_dict["schedulers"]):
            scheduler.load_state_dict(state)
