"""Trainer callbacks that are not tied to one model: exact `--recover` (`exact_resume`)."""

from ldnet_allennlp.training.exact_resume import ExactResumeCallback  # noqa: F401
