"""
cuDNN's rule for recurrent layers, enforced on the CPU.

On a GPU, an RNN that ran in eval mode keeps none of what its backward needs, and autograd stops
at it with `RuntimeError: cudnn RNN backward can only be called in training mode`. PyTorch on
the CPU has no such rule, so a model that backpropagates through an eval-mode LSTM trains here and
crashes on the first GPU. `enforce_cudnn_rnn_rule()` makes the CPU refuse it the same way: the
outputs of an `LSTM`, `GRU` or `RNN` that runs in eval mode while autograd records get a hook that
raises cuDNN's error when a gradient reaches them. Outputs themselves are unchanged, and nothing
happens under `torch.no_grad()` or when no gradient can reach the RNN.

The test suite runs under it (`tests/conftest.py`), so every training path that a test runs obeys
the rule.
"""

from contextlib import contextmanager
from typing import Iterator

import torch
from torch.nn.utils.rnn import PackedSequence

CUDNN_MESSAGE = "cudnn RNN backward can only be called in training mode"

RNN_CLASSES = (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)


def _refuse(grad: torch.Tensor) -> torch.Tensor:
    raise RuntimeError(CUDNN_MESSAGE)


def _guard(output):
    """Hooks `_refuse` onto every tensor of an RNN's output that a gradient could reach."""
    if isinstance(output, PackedSequence):
        _guard(output.data)
    elif isinstance(output, (tuple, list)):
        for item in output:
            _guard(item)
    elif isinstance(output, torch.Tensor) and output.requires_grad:
        output.register_hook(_refuse)
    return output


def _ruled(original_forward):
    def forward(self, *args, **kwargs):
        output = original_forward(self, *args, **kwargs)
        if not self.training and torch.is_grad_enabled():
            _guard(output)
        return output

    forward.__wrapped__ = original_forward
    return forward


@contextmanager
def enforce_cudnn_rnn_rule() -> Iterator[None]:
    """Within the block, backward through an RNN that ran in eval mode raises cuDNN's error."""
    originals = {cls: cls.forward for cls in RNN_CLASSES}
    for cls, forward in originals.items():
        cls.forward = _ruled(forward)
    try:
        yield
    finally:
        for cls, forward in originals.items():
            cls.forward = forward


@contextmanager
def rule_suspended() -> Iterator[None]:
    """Within the block, the CPU's own behaviour again (to compute what code did before)."""
    ruled = {cls: cls.forward for cls in RNN_CLASSES}
    for cls, forward in ruled.items():
        cls.forward = getattr(forward, "__wrapped__", forward)
    try:
        yield
    finally:
        for cls, forward in ruled.items():
            cls.forward = forward
