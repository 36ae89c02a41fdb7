from ldnet_allennlp.distillation.classification.predictors.distillation_predictor import (  # noqa: F401
    DistillationPredictor,
)
