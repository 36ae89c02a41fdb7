from ldnet_allennlp.lm.dataset_readers.dense_lm_text import DenseLMTextDatasetReader  # noqa: F401
