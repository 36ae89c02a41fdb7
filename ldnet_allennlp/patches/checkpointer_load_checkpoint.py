"""
**Replaces**: `allennlp.training.checkpointer.Checkpointer.load_checkpoint` (what `--recover`
calls), with AllenNLP's own method run after two steps:

- before: an incomplete checkpoint (its model or training-state file missing, or not a complete
  torch archive) is **deleted** with a warning naming its files, so the newest complete one is
  loaded;
- after: the checkpointer's "every N batches" schedule continues from the loaded checkpoint.

**Why**: AllenNLP names the newest checkpoint by its `model_state_e*_b*.th` file alone, so a
process killed while writing a checkpoint leaves one that `--recover` fails on (`EOFError`); and
its "every N batches" count restarts from 0, so a resumed run checkpoints at other batches than an
uninterrupted one. Part of exact resume (`ldnet_allennlp/training/exact_resume.py`).

**Targets**: AllenNLP 2.10.1.
**Remove when**: AllenNLP writes checkpoints atomically (never: AllenNLP is archived).
**Test**: `tests/patches/checkpointer_load_checkpoint_test.py` (and the kill tests in
`tests/training/exact_resume_test.py`).
"""

import contextlib
import logging
import os
import zipfile

from allennlp.training.checkpointer import Checkpointer

logger = logging.getLogger(__name__)

ALLENNLP_LOAD_CHECKPOINT = Checkpointer.load_checkpoint


def is_complete_torch_file(path: str) -> bool:
    # torch.save writes a zip archive whose central directory comes last
    return os.path.isfile(path) and zipfile.is_zipfile(path)


def load_complete_checkpoint(self: Checkpointer):
    for point in sorted(self._find_all_checkpoints()):
        paths = [self._model_state_path(*point), self._training_state_path(*point)]
        if not all(is_complete_torch_file(path) for path in paths):
            logger.warning(
                "--recover: deleting the incomplete checkpoint %s (the process was stopped while "
                "writing it); resuming from the one before.",
                " + ".join(os.path.basename(path) for path in paths),
            )
            for path in paths:
                with contextlib.suppress(FileNotFoundError):  # distributed workers race here
                    os.remove(path)
    checkpoint = ALLENNLP_LOAD_CHECKPOINT(self)
    if checkpoint is not None:
        # the "every N batches" schedule continues from this checkpoint, not from 0
        self._last_save_num_epochs_completed = checkpoint.trainer_state["epochs_completed"]
        self._last_save_num_batches_in_epoch_completed = checkpoint.trainer_state[
            "batches_in_epoch_completed"
        ]
    return checkpoint


def apply() -> None:
    """Idempotent: always wraps AllenNLP's own method, never a wrapped one."""
    Checkpointer.load_checkpoint = load_complete_checkpoint
