"""ELMo-style scalar mix over our dense forward/backward LMs (PAPERS.md §2)."""

from ldnet_allennlp.elmo.dense_bilm import DenseBiLm  # noqa: F401
from ldnet_allennlp.elmo.scalar_mix_embedder import DenseLMScalarMixEmbedder  # noqa: F401
