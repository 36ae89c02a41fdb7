"""
Training pieces that are not tied to one model: exact `--recover` (`exact_resume`) and LD-Net's
learning-rate schedule (`inverse_time_decay`).
"""

from ldnet_allennlp.training.exact_resume import ExactResumeCallback  # noqa: F401
from ldnet_allennlp.training.inverse_time_decay import InverseTimeDecay  # noqa: F401
from ldnet_allennlp.training.lm_feature_cache import LmFeatureCacheCallback  # noqa: F401
