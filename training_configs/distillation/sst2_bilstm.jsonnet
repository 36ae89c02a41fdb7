// Tang et al. (2019) student on GLUE SST-2 (dev = SST2_DEV_DATA_PATH; the benchmark carves it
// from train.tsv and keeps GLUE dev.tsv as the held-out test, see docs/distillation.md):
// plain BiLSTM trained on the gold labels (cross-entropy, no teacher).
// Data: SST2_TRAIN_DATA_PATH, SST2_DEV_DATA_PATH (TSV files `sentence<TAB>label`).
// Measured in benchmarks/results/distillation.json: "sst2_dev_acc_bilstm" (dev),
// "sst2_test_acc_bilstm" (held-out test).
local student = import "student.libsonnet";

student.config(
  pair=false,
  train_path=std.extVar("SST2_TRAIN_DATA_PATH"),
  validation_path=std.extVar("SST2_DEV_DATA_PATH"),
  transfer_set=false,
)
