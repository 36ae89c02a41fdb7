// Tang et al. (2019) student on GLUE SST-2 (dev = GLUE dev.tsv):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SST2_DATA_PATH (folder of the GLUE/SICK files).
// Measured dev accuracy: benchmarks/results/distillation.json ("sst2_dev_acc_bilstm").
local student = import "student.libsonnet";
local data = std.extVar("SST2_DATA_PATH");

student.config(
  pair=false,
  train_path=data + "/train.tsv",
  validation_path=data + "/dev.tsv",
  transfer_set=false,
)
