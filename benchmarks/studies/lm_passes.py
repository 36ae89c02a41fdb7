"""
`python -m benchmarks lm_passes`: the final NER recipe's dev F1 on LM pairs of some size after P
passes over the LM corpus, beside the shipped LMs and no LM (`lm_variants.PASSES`).

    python -m benchmarks lm_passes --passes 0 1 --epochs 8 [--lm-size 6x64]
    python -m benchmarks lm_passes --stage record --epochs 8
"""

from benchmarks.studies.lm_variants import PASSES as STUDY  # noqa: F401
