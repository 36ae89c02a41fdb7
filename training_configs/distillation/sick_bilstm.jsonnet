// Tang et al. (2019) student on SICK 3-way (train = SemEval_set TRAIN, dev = TRIAL; TEST is the
// held-out test, read only by `allennlp evaluate` at the end):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SICK_DATA_PATH (the SICK.txt file).
// Measured in benchmarks/results/distillation.json: "pair_dev_acc_bilstm" (TRIAL),
// "pair_test_acc_bilstm" (TEST).
local student = import "student.libsonnet";
local sick = std.extVar("SICK_DATA_PATH");  // the SICK.txt file

student.config(
  pair=true,
  train_path=sick + "#SemEval_set=TRAIN",
  validation_path=sick + "#SemEval_set=TRIAL",
  transfer_set=false,
)
