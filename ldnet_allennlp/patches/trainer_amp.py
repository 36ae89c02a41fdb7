"""
**Replaces**: the `amp` module that AllenNLP's `GradientDescentTrainer` uses
(`allennlp.training.gradient_descent_trainer.amp`, i.e. `torch.cuda.amp`).

**Why**: the trainer calls `torch.cuda.amp.autocast(...)` every batch, which torch >= 2.4
deprecates with a `FutureWarning` a user cannot act on. `torch.amp.autocast("cuda", ...)` and
`torch.amp.GradScaler("cuda", ...)` are the same functions without the warning.

**Targets**: AllenNLP 2.10.1 on torch 2.14.1.
**Remove when**: torch removes `torch.cuda.amp` (then this is required) or AllenNLP calls
`torch.amp` (never: AllenNLP is archived).
**Test**: `tests/patches/trainer_amp_test.py`.
"""

import torch

from allennlp.training import gradient_descent_trainer


class CudaAmp:
    """`torch.cuda.amp`'s autocast and GradScaler, through the non-deprecated `torch.amp`."""

    @staticmethod
    def autocast(enabled: bool = True, **kwargs):
        return torch.amp.autocast("cuda", enabled=enabled, **kwargs)

    @staticmethod
    def GradScaler(**kwargs):  # noqa: N802 (mirrors torch's name)
        return torch.amp.GradScaler("cuda", **kwargs)


def apply() -> None:
    """Idempotent: sets the same module attribute each time."""
    gradient_descent_trainer.amp = CudaAmp
