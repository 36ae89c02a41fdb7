// Tang et al. (2019) student on SICK 3-way (train = SemEval_set TRAIN, dev = TRIAL):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SICK_DATA_PATH (the SICK.txt file).
// Measured dev accuracy: benchmarks/results/distillation.json ("pair_dev_acc_bilstm").
local student = import "student.libsonnet";
local sick = std.extVar("SICK_DATA_PATH");  // the SICK.txt file

student.config(
  pair=true,
  train_path=sick + "#SemEval_set=TRAIN",
  validation_path=sick + "#SemEval_set=TRIAL",
  transfer_set=false,
)
