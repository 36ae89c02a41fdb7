from ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor import TaggerPredictor  # noqa: F401
