from ldnet_allennlp.distillation.classification.models.distillation_model import (  # noqa: F401
    DistillationModel,
    distillation_loss,
    pair_features,
)
