// Tang et al. (2019) student on GLUE SST-2 (dev = GLUE dev.tsv):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SST2_TRAIN_DATA_PATH, SST2_DEV_DATA_PATH (GLUE train.tsv, dev.tsv).
// Measured dev accuracy: benchmarks/results/distillation.json ("sst2_dev_acc_bilstm").
local student = import "student.libsonnet";

student.config(
  pair=false,
  train_path=std.extVar("SST2_TRAIN_DATA_PATH"),
  validation_path=std.extVar("SST2_DEV_DATA_PATH"),
  transfer_set=false,
)
