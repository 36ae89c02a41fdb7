from ldnet_allennlp.pruning.penalty import LayerSelectionRegularizer  # noqa: F401
