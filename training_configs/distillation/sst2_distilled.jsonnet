// Tang et al. (2019) student on GLUE SST-2 (dev = SST2_DEV_DATA_PATH; the benchmark carves it
// from train.tsv and keeps GLUE dev.tsv as the held-out test, see docs/distillation.md):
// BiLSTM distilled from the teacher's logits on the un-augmented transfer set
// (allennlp ldnet-distill-transfer-set ... --n-iter 0), alpha = 0.
// Data: SST2_DEV_DATA_PATH (validation); SST2_TRANSFER_SET = the transfer set (JSON lines).
// Measured in benchmarks/results/distillation.json: "sst2_dev_acc_distilled" (dev),
// "sst2_test_acc_distilled" (held-out test).
local student = import "student.libsonnet";

student.config(
  pair=false,
  train_path=std.extVar("SST2_TRANSFER_SET"),
  validation_path=std.extVar("SST2_DEV_DATA_PATH"),
  transfer_set=true,
)
