"""
LD-Net's dense language models and what is built on them: the reader for tokenized LM text, the
dense LM, the dense biLM feature module (the only code that opens an LM archive), the LM-feature
token embedders (`layer_selection`, `dense_lm_scalar_mix`) and the `dense_lm_tokens` indexer.
"""

from ldnet_allennlp.lm.dataset_readers import DenseLMTextDatasetReader  # noqa: F401
from ldnet_allennlp.lm.models import DenseLanguageModel  # noqa: F401
from ldnet_allennlp.lm.modules import DenseBiLm, find_dense_bilms  # noqa: F401
from ldnet_allennlp.lm.token_embedders import (  # noqa: F401
    DenseLMScalarMixEmbedder,
    LayerSelectionTokenEmbedder,
)
from ldnet_allennlp.lm.token_indexers import DenseLMTokenIndexer  # noqa: F401
from ldnet_allennlp.lm.commands import ExportWordVectors  # noqa: F401
from ldnet_allennlp.lm.word_vector_file import write_word_vector_file  # noqa: F401
