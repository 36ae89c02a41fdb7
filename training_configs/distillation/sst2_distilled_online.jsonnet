// Tang et al. (2019) student on GLUE SST-2 (dev = SST2_DEV_DATA_PATH; the benchmark carves it
// from train.tsv and keeps GLUE dev.tsv as the held-out test, see docs/distillation.md):
// BiLSTM distilled from a fine-tuned teacher whose logits are computed online, batch by batch,
// from the raw training sentences (no transfer set, hence no augmentation), alpha = 0.
// Like sst2_distilled.jsonnet (the same teacher's logits on the training sentences, here not
// rounded and with duplicate sentences kept) with one command fewer, at the price of a teacher
// forward pass per batch and epoch. See docs/distillation.md, "Online teacher".
// Data: SST2_TRAIN_DATA_PATH, SST2_DEV_DATA_PATH (TSV files `sentence<TAB>label`);
// SST2_TEACHER_ARCHIVE = the teacher's model.tar.gz (sst2_teacher.jsonnet). The student's own
// archive does not need the teacher to load, predict or evaluate on a TSV.
// Not benchmarked (the offline variant's figure: "sst2_dev_acc_distilled" in
// benchmarks/results/distillation.json).
local student = import "student.libsonnet";

student.config(
  pair=false,
  train_path=std.extVar("SST2_TRAIN_DATA_PATH"),
  validation_path=std.extVar("SST2_DEV_DATA_PATH"),
  teacher_archive=std.extVar("SST2_TEACHER_ARCHIVE"),
)
