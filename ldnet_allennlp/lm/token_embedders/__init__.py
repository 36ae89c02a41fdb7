from ldnet_allennlp.lm.token_embedders.layer_selection import LayerSelectionTokenEmbedder  # noqa
from ldnet_allennlp.lm.token_embedders.scalar_mix import DenseLMScalarMixEmbedder  # noqa: F401
