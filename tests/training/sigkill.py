"""
Test-only ways to SIGKILL a real `allennlp` process at a chosen point: no Python clean-up, no
`finally`, no flushing (what `kill -9` or the OOM killer does). Load with
`--include-package tests.training.sigkill` from the repository root.

The kill point comes from the environment, not the config, because `allennlp train --recover`
refuses a config that differs from the interrupted run's: every run of a test uses the same
config, and only the run to be killed sets one of

- `LDNET_TEST_SIGKILL_AT="<epoch>:<batch>"` (0-based epoch, 1-based training batch): the
  `test_sigkill` trainer callback kills the process in `on_batch` of that batch, after its
  optimizer step and before the checkpointer sees it, so the work since the last checkpoint is
  lost and redone.
- `LDNET_TEST_SIGKILL_AT="<epoch>:<batch>:saving"`: the process dies while writing the
  checkpoint taken after that batch (its model state is on disk, its training state is cut
  short), because this callback's part of the training state kills it when pickled.
- `LDNET_TEST_SIGKILL_AFTER_FORWARDS=<n>` (any command, e.g. `distill-transfer-set`): the
  process dies when an AllenNLP `Model` finishes its forward pass number n + 1, i.e. after n
  complete batches (an outermost pass: a model run inside another's forward is not counted).
  With `LDNET_TEST_SIGKILL_FORWARDS_OF=TextFieldEmbedder` the passes counted are a
  `TextFieldEmbedder`'s instead (for a command that runs a tagger's network without its
  `forward`, as `ldnet-tagging-transfer-set`'s teachers do).
"""

import os
import signal
from typing import Any, Dict, Optional, Tuple

import torch
from allennlp.models import Model
from allennlp.training.callbacks import TrainerCallback

KILL_AT_VARIABLE = "LDNET_TEST_SIGKILL_AT"
KILL_AFTER_FORWARDS_VARIABLE = "LDNET_TEST_SIGKILL_AFTER_FORWARDS"
FORWARDS_OF_VARIABLE = "LDNET_TEST_SIGKILL_FORWARDS_OF"


def sigkill_this_process() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _SigkillWhenPickled:
    def __reduce__(self):
        sigkill_this_process()


def _kill_at() -> Optional[Tuple[int, int, bool]]:
    value = os.environ.get(KILL_AT_VARIABLE)
    if not value:
        return None
    epoch, batch, *saving = value.split(":")
    return int(epoch), int(batch), saving == ["saving"]


@TrainerCallback.register("test_sigkill")
class SigkillCallback(TrainerCallback):
    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._last_batch: Optional[Tuple[int, int]] = None

    def on_batch(
        self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
        is_training, is_primary=True, batch_grad_norm=None, **kwargs,
    ) -> None:  # fmt: skip
        kill_at = _kill_at()
        if not is_training or kill_at is None:
            return
        self._last_batch = (epoch, batch_number)
        if self._last_batch == kill_at[:2] and not kill_at[2]:
            sigkill_this_process()

    def state_dict(self) -> Dict[str, Any]:
        kill_at = _kill_at()
        if kill_at is not None and kill_at[2] and self._last_batch == kill_at[:2]:
            return {"sigkill": _SigkillWhenPickled()}
        return {}


_forwards = 0
_open = 0  # counted modules whose forward is running (an LM's embedder inside a tagger's)


def _counted(module: torch.nn.Module) -> bool:
    from allennlp.modules import TextFieldEmbedder

    kinds = {"Model": Model, "TextFieldEmbedder": TextFieldEmbedder}
    return isinstance(module, kinds[os.environ.get(FORWARDS_OF_VARIABLE, "Model")])


def _enter(module: torch.nn.Module, inputs) -> None:
    global _open
    if _counted(module):
        _open += 1


def _sigkill_after_forwards(module: torch.nn.Module, inputs, output) -> None:
    """Counts the outermost forward passes of the counted modules."""
    global _forwards, _open
    if not _counted(module):
        return
    _open -= 1
    if _open == 0:
        _forwards += 1
        if _forwards > int(os.environ[KILL_AFTER_FORWARDS_VARIABLE]):
            sigkill_this_process()


if os.environ.get(KILL_AFTER_FORWARDS_VARIABLE):
    torch.nn.modules.module.register_module_forward_pre_hook(_enter)
    torch.nn.modules.module.register_module_forward_hook(_sigkill_after_forwards)
