"""
**Replaces**: AllenNLP's `reduce_on_plateau` learning-rate scheduler (registered again under the
same name, with the same config keys).

**Why**: torch >= 2.7 removed `ReduceLROnPlateau(verbose=...)`, which AllenNLP's scheduler
always passes, so any config with `"type": "reduce_on_plateau"` fails to build. The replacement
accepts `verbose` and ignores it (no printing: the same as AllenNLP's default `false`).

**Targets**: AllenNLP 2.10.1 on torch 2.14.1.
**Remove when**: AllenNLP's scheduler no longer passes `verbose` (never: AllenNLP is archived).
**Test**: `tests/patches/reduce_on_plateau_test.py`.
"""

from typing import List, Union

import torch
from torch.optim import Optimizer

from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)


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


def apply() -> None:
    """Idempotent: registering the same class under the same name again changes nothing."""
    LearningRateScheduler.register("reduce_on_plateau", exist_ok=True)(
        ReduceOnPlateauLearningRateScheduler
    )
