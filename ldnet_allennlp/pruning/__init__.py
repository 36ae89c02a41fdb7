from ldnet_allennlp.pruning.penalty import LayerSelectionRegularizer  # noqa: F401
from ldnet_allennlp.pruning.callback import LayerPruningCallback  # noqa: F401
from ldnet_allennlp.pruning.commands import LdnetPrune  # noqa: F401
