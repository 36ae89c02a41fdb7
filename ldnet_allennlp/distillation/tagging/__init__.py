"""
Distilling a CRF tagger into a pruned student tagger (LD-Net x Tang et al.): the `crf_ensemble`
teacher's per-token CRF marginals and silver tags, the tagging transfer set
(`allennlp ldnet-tagging-transfer-set`) and its reader (`ldnet_tagging_distillation`). The
student is `ldnet_crf_tagger`, whose loss adds the distillation term (`tagging/crf_marginals.py`).
"""

from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher  # noqa: F401
from ldnet_allennlp.distillation.tagging.dataset_readers import *  # noqa: F401,F403
from ldnet_allennlp.distillation.tagging.commands import *  # noqa: F401,F403
