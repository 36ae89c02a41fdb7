"""
`lm_feature_cache`: a trainer callback that computes the frozen LMs' features of each sentence
once per training run instead of once per epoch (`DenseBiLm.cache_features`).
"""

import logging
from typing import Any, Dict, Optional

from allennlp.training.callbacks import TrainerCallback

from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms

logger = logging.getLogger(__name__)


@TrainerCallback.register("lm_feature_cache")
class LmFeatureCacheCallback(TrainerCallback):
    """
    Turns on the feature cache of every `DenseBiLm` in the trained model when training starts and
    off when it ends, so an archive loaded later (serving, `predict`) never caches. Sentences
    whose features can change (LMs fine-tuned, layer masks trained as in LD-Net's pruning phase,
    `lm_dropout`) are computed every time as without the callback. Training and validation
    sentences are both cached: memory grows by `2 · (num_lm_layers + 1) · 128` floats a token
    of the data (about 1.7 GB for CoNLL-03 train + dev with the shipped 6-layer LMs).
    No config keys: `"callbacks": ["lm_feature_cache"]`.
    """

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        bilms = find_dense_bilms(trainer.model)
        for _, bilm in bilms:
            bilm.cache_features(True)
        logger.info("lm_feature_cache: caching the features of %d biLM(s)", len(bilms))

    def on_epoch(
        self, trainer, metrics: Dict[str, Any], epoch: int, is_primary: bool = True, **kwargs
    ) -> None:
        for name, bilm in find_dense_bilms(trainer.model):
            cache = bilm.feature_cache
            if cache is not None:
                logger.info(
                    "lm_feature_cache %s: %d sentences cached, %d hits, %d misses",
                    name or "biLM",
                    len(cache),
                    cache.hits,
                    cache.misses,
                )

    def on_end(
        self,
        trainer,
        metrics: Optional[Dict[str, Any]] = None,
        epoch: Optional[int] = None,
        is_primary: bool = True,
        **kwargs,
    ) -> None:
        for _, bilm in find_dense_bilms(trainer.model):
            bilm.cache_features(False)
