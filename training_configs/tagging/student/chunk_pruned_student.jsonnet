// The pruned chunking student: recipe/chunk_ldnet_glove_sgd.jsonnet's tagger with the
// LM layers of the shipped chunk_pruned (forward [0, 1, 4], backward [4]), started from
// chunk_pruned's weights with a training-file vocabulary (the `pruned_students` study drops the
// rows of test-only words and characters, which were never trained: `restricted_start` in
// benchmarks/studies/pruned_students.py), trained on train.txt without its held-out tenth
// plus a transfer set of news sentences labelled by the teachers. Picked on the held-out tenth;
// no test file is read. Variables as in ner_pruned_student.jsonnet, with
// CONLL00_TRAIN_DATA_PATH for the data.
local distill = import 'distill.libsonnet';

distill(
  import '../recipe/chunk_ldnet_glove_sgd.jsonnet',
  std.extVar('STUDENT_START_DIR'),
  std.extVar('TRANSFER_SET_PATH'),
  [0, 1, 4],
  [4],
  loss=std.extVar('DISTILLATION_LOSS'),
  weight=std.parseJson(std.extVar('DISTILLATION_WEIGHT')),
  transfer_sentences=std.parseJson(std.extVar('TRANSFER_SENTENCES')),
  num_epochs=std.parseJson(std.extVar('STUDENT_EPOCHS')),
  lr=std.parseJson(std.extVar('STUDENT_LR')),
)
