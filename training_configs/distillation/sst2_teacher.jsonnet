// Teacher for Tang et al. (2019), "Distilling Task-Specific Knowledge from BERT into Simple Neural
// Networks", on GLUE SST-2: MiniLM-L6 (BERT architecture) fine-tuned with a softmax classifier.
// Data: SST2_TRAIN_DATA_PATH / SST2_DEV_DATA_PATH (`sentence<TAB>label`): the benchmark uses a
// subset of GLUE train.tsv and a dev carved from it; GLUE dev.tsv is its held-out test.
// The paper's teacher is BERT-large (94.9 dev); this 6-layer model is far smaller. Measured in
// benchmarks/results/distillation.json: "sst2_dev_acc_teacher" (dev), "sst2_test_acc_teacher"
// (held-out test).
local teacher = import "teacher.libsonnet";

teacher.config(
  reader={ type: "distillation_tsv", sentence_column: "sentence", label_column: "label" },
  train_path=std.extVar("SST2_TRAIN_DATA_PATH"),
  validation_path=std.extVar("SST2_DEV_DATA_PATH"),
)
