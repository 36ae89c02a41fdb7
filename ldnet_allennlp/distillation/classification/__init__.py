"""
Tang et al. (2019), "Distilling Task-Specific Knowledge from BERT into Simple Neural Networks":
a transformer teacher (AllenNLP's `basic_classifier` over `pretrained_transformer`), an augmented
transfer set labelled with the teacher's logits (`allennlp ldnet-distill-transfer-set`), and the
BiLSTM student (`distillation_student`).
"""

from ldnet_allennlp.distillation.classification.dataset_readers import *  # noqa: F401,F403
from ldnet_allennlp.distillation.classification.models import *  # noqa: F401,F403
from ldnet_allennlp.distillation.classification.predictors import *  # noqa: F401,F403
from ldnet_allennlp.distillation.classification.commands import *  # noqa: F401,F403
