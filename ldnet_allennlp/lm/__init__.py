"""LD-Net's dense language models: reader for tokenized LM text and the dense LM."""

from ldnet_allennlp.lm.dataset_readers import DenseLMTextDatasetReader  # noqa: F401
from ldnet_allennlp.lm.models import DenseLanguageModel  # noqa: F401
from ldnet_allennlp.lm.commands import ExportWordVectors  # noqa: F401
from ldnet_allennlp.lm.word_vectors import export_word_vectors  # noqa: F401
