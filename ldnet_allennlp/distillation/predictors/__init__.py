from ldnet_allennlp.distillation.predictors.distillation_predictor import (  # noqa: F401
    DistillationPredictor,
)
