"""
`python -m benchmarks lm_finetune`: the shipped LMs fine-tuned on a task's own text (ELMo's
domain transfer), measured by the final tagging recipe's dev F1 against the same recipe on the
shipped LMs, at equal epochs (`lm_variants.FINETUNE`).

    python -m benchmarks lm_finetune --task chunk --epochs 20 [--seed 2]
    python -m benchmarks lm_finetune --task ner --epochs 8 --stage record   # = --record-only

Stage `train`: the task's training and dev text (`scripts/conll_to_lm_text.py`; NER: eng.train /
eng.testa; chunking: train.txt without / with only the held-out tenth the chunkers are chosen on,
so no LM reads dev sentences in training; never a test file); both LMs fine-tuned for
`--lm-epochs` epochs, keeping the epoch of lowest dev perplexity
(`training_configs/tagging/lm_finetune_*.jsonnet`); the tagger on them (`--lm-label ft`). Stage
`record` writes tagging.json's `lm_finetune_study.<task>`: the LMs' dev perplexity before
(`allennlp evaluate` of the shipped LMs) and after, their epochs and seconds, and every
fine-tuned-LM tagger's dev F1 by epoch beside the recipe's on the shipped LMs (every seed).
"""

from benchmarks.studies.lm_variants import FINETUNE as STUDY  # noqa: F401
