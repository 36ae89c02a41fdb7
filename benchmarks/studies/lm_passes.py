"""
`python -m benchmarks lm_passes`: dev F1 of the final NER recipe (`ner_ldnet_glove_sgd`) on LM
pairs that saw P passes over the LM corpus, beside the same tagger on the shipped LMs and the
no-LM tagger (`ner_vanilla_glove_sgd`) at equal epochs (`lm_variants.PASSES`).

    python -m benchmarks lm_passes --passes 0 1 --epochs 8 [--lm-size 6x64]
    python -m benchmarks lm_passes --stage record --epochs 8     # = --record-only

Stage `train`, for each P: `pack` the LM corpus plus the CoNLL-03 and CoNLL-00 train words as
ids under the shipped LMs' vocabulary (once); train both directions with
`scripts/pretrain_lms_accelerated.py train --passes P` and the shipped LMs' first-stage settings
(an LM interrupted mid-pass trains again from its start), then `archive`; the tagger on them
(`--lm-label passP`). Stage `record` rebuilds tagging.json's `lm_passes`.
"""

from benchmarks.studies.lm_variants import PASSES as STUDY  # noqa: F401
