from ldnet_allennlp.tagging.predictors.tagger import TaggerPredictor  # noqa: F401
