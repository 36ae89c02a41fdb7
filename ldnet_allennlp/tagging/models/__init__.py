from ldnet_allennlp.tagging.models.crf_tagger import LdnetCrfTagger  # noqa: F401
