"""`ldnet_allennlp.patches.default_callbacks`: `exact_resume` is a default trainer callback."""

from allennlp.training import gradient_descent_trainer
from allennlp.training.callbacks import ConsoleLoggerCallback, TrainerCallback

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.training import ExactResumeCallback


def test_exact_resume_is_added_to_allennlps_defaults():
    assert gradient_descent_trainer.DEFAULT_CALLBACKS == (
        ConsoleLoggerCallback,
        ExactResumeCallback,
    )


def test_exact_resume_can_also_be_listed_by_name():
    # for configs with "enable_default_callbacks": false
    assert TrainerCallback.by_name("exact_resume") is ExactResumeCallback
