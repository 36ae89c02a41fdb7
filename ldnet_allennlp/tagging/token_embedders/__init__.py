from ldnet_allennlp.tagging.token_embedders.layer_selection import (  # noqa: F401
    DenseLMTokenIndexer,
    LayerSelectionTokenEmbedder,
)
