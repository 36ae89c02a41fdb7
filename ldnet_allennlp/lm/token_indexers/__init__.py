from ldnet_allennlp.lm.token_indexers.dense_lm_tokens import DenseLMTokenIndexer  # noqa: F401
