"""
**Replaces**: AllenNLP's default trainer callbacks
(`allennlp.training.gradient_descent_trainer.DEFAULT_CALLBACKS`, `(ConsoleLoggerCallback,)`),
with the same tuple plus `ExactResumeCallback` (`"exact_resume"`,
`ldnet_allennlp/training/exact_resume.py`).

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

from allennlp.training import gradient_descent_trainer

from ldnet_allennlp.training.exact_resume import ExactResumeCallback


def apply() -> None:
    """Idempotent: adds the callback only if it is not a default already."""
    defaults = gradient_descent_trainer.DEFAULT_CALLBACKS
    if ExactResumeCallback not in defaults:
        gradient_descent_trainer.DEFAULT_CALLBACKS = tuple(defaults) + (ExactResumeCallback,)
