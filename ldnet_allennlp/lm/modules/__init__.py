from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm, find_dense_bilms  # noqa: F401
