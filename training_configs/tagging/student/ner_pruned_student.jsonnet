// The pruned NER student: recipe/ner_ldnet_glove_sgd.jsonnet's tagger with the LM
// layers of the shipped ner_pruned (forward [4], backward [4]), started from ner_pruned's weights
// and trained on eng.train plus a transfer set of news sentences labelled by the teachers
// (`allennlp ldnet-tagging-transfer-set`). Picked on eng.testa; no test file is read.
// Set CONLL03_TRAIN_DATA_PATH, CONLL03_DEV_DATA_PATH, FORWARD_LM_ARCHIVE, BACKWARD_LM_ARCHIVE,
// STUDENT_START_DIR (vocabulary/ + best.th of the tagger it starts from), TRANSFER_SET_PATH, and
// optionally DISTILLATION_LOSS (kl | silver), DISTILLATION_WEIGHT, TRANSFER_SENTENCES,
// STUDENT_EPOCHS, STUDENT_LR. `python -m benchmarks pruned_students` sets them all.
local distill = import 'distill.libsonnet';

distill(
  import '../recipe/ner_ldnet_glove_sgd.jsonnet',
  std.extVar('STUDENT_START_DIR'),
  std.extVar('TRANSFER_SET_PATH'),
  [4],
  [4],
  loss=std.extVar('DISTILLATION_LOSS'),
  weight=std.parseJson(std.extVar('DISTILLATION_WEIGHT')),
  transfer_sentences=std.parseJson(std.extVar('TRANSFER_SENTENCES')),
  num_epochs=std.parseJson(std.extVar('STUDENT_EPOCHS')),
  lr=std.parseJson(std.extVar('STUDENT_LR')),
)
