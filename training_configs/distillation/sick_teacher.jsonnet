// Teacher for Tang et al. (2019) on the pair task SICK (3-way NEUTRAL / ENTAILMENT / CONTRADICTION,
// the MNLI label set; MNLI itself is not available offline). MiniLM-L6 over
// `[CLS] sentence_A [SEP] sentence_B [SEP]`.
// Data: SICK_DATA_PATH = the SICK.txt file; train = SemEval_set TRAIN (4,439 pairs), dev =
// TRIAL (495 pairs), chosen with the reader's `#column=value` path suffix; TEST (4,906 pairs) is
// the held-out test (`allennlp evaluate ... "$SICK_DATA_PATH#SemEval_set=TEST"` at the end).
// Measured in benchmarks/results/distillation.json: "pair_dev_acc_teacher" (TRIAL),
// "pair_test_acc_teacher" (TEST).
local teacher = import "teacher.libsonnet";
local sick = std.extVar("SICK_DATA_PATH");  // the SICK.txt file

teacher.config(
  reader={
    type: "distillation_tsv",
    premise_column: "sentence_A",
    hypothesis_column: "sentence_B",
    label_column: "entailment_label",
  },
  train_path=sick + "#SemEval_set=TRAIN",
  validation_path=sick + "#SemEval_set=TRIAL",
  num_epochs=4,
)
