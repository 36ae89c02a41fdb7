"""
**Replaces**: AllenNLP's default trainer callbacks
(`allennlp.training.gradient_descent_trainer.DEFAULT_CALLBACKS`, `(ConsoleLoggerCallback,)`),
with the same tuple plus the callbacks `apply` is handed: `ldnet_allennlp/__init__.py` hands it
`ExactResumeCallback` (`"exact_resume"`, `ldnet_allennlp/training/exact_resume.py`); this module
imports no feature code.

**Why**: AllenNLP 2.10.1's `--recover` after a kill is not exact (no random state in its
checkpoints, validation shuffles not replayed, a forgotten `best.th`; the module's docstring has
the details and measurements). As a default callback, exact resume works for every existing
config with no change: a config that lists its own `trainer.callbacks` keeps AllenNLP's
defaults (`"enable_default_callbacks": true` unless it says otherwise). With
`"enable_default_callbacks": false`, list `"exact_resume"` in `trainer.callbacks` instead.

**Targets**: AllenNLP 2.10.1.
**Remove when**: AllenNLP's own resume is exact (never: AllenNLP is archived).
**Test**: `tests/patches/default_callbacks_test.py` (and the resume tests in `tests/training/`).
"""

from typing import Sequence, Type

from allennlp.training import gradient_descent_trainer
from allennlp.training.callbacks import TrainerCallback


def apply(callbacks: Sequence[Type[TrainerCallback]] = ()) -> None:
    """
    Idempotent: adds each callback only if it is not a default already.

    # Parameters

    callbacks : `Sequence[Type[TrainerCallback]]`, optional (default = `()`)
        The callback classes to make default callbacks of every trainer.
    """
    for callback in callbacks:
        defaults = gradient_descent_trainer.DEFAULT_CALLBACKS
        if callback not in defaults:
            gradient_descent_trainer.DEFAULT_CALLBACKS = tuple(defaults) + (callback,)
