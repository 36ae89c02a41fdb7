"""
Knowledge distillation after Tang et al. (2019), "Distilling Task-Specific Knowledge from BERT
into Simple Neural Networks", for two tasks that share one `Teacher` interface (`teacher.py`)
and one resumable transfer-set writer (`transfer_set.py`):

- `classification/`: sentence classification (single sentences and pairs), a transformer
  teacher's logits distilled into a BiLSTM student;
- `tagging/`: sequence labelling, an ensemble of CRF taggers' marginals distilled into a pruned
  LD-Net student tagger.

`ldnet_allennlp/__init__.py` imports both subpackages (their registered components).
"""
