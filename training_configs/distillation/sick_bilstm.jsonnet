// Tang et al. (2019) student on SICK 3-way (train = SemEval_set TRAIN, dev = TRIAL):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SICK_DATA_PATH (folder of the GLUE/SICK files).
// Measured dev accuracy: benchmarks/results/distillation.json ("pair_dev_acc_bilstm").
local student = import "student.libsonnet";
local data = std.extVar("SICK_DATA_PATH");

student.config(
  pair=true,
  train_path=data + "/SICK.txt#SemEval_set=TRAIN",
  validation_path=data + "/SICK.txt#SemEval_set=TRIAL",
  transfer_set=false,
)
