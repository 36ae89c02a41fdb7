from ldnet_allennlp.pruning.penalty import LayerSelectionRegularizer  # noqa: F401
from ldnet_allennlp.pruning.callback import LayerPruningCallback  # noqa: F401
from ldnet_allennlp.pruning.command import LdnetPrune  # noqa: F401
