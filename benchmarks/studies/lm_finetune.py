"""
`python -m benchmarks lm_finetune`: the final tagging recipe's dev F1 on the shipped LMs
fine-tuned on a task's own text (ELMo's domain transfer), beside the shipped LMs
(`lm_variants.FINETUNE`).

    python -m benchmarks lm_finetune --task chunk --epochs 20 [--seed 2]
    python -m benchmarks lm_finetune --task ner --epochs 8 --stage record
"""

from benchmarks.studies.lm_variants import FINETUNE as STUDY  # noqa: F401
