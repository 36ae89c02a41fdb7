from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel  # noqa: F401
