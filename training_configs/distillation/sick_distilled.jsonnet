// Tang et al. (2019) student on SICK 3-way (train = SemEval_set TRAIN, dev = TRIAL; TEST is the
// held-out test, read only by `allennlp evaluate` at the end):
// BiLSTM distilled from the teacher's logits on the un-augmented transfer set
// (allennlp ldnet-distill-transfer-set ... --n-iter 0), alpha = 0.
// Data: SICK_DATA_PATH (validation); SICK_TRANSFER_SET = the transfer set (JSON lines).
// Measured in benchmarks/results/distillation.json: "pair_dev_acc_distilled" (TRIAL),
// "pair_test_acc_distilled" (TEST).
local student = import "student.libsonnet";
local sick = std.extVar("SICK_DATA_PATH");  // the SICK.txt file

student.config(
  pair=true,
  train_path=std.extVar("SICK_TRANSFER_SET"),
  validation_path=sick + "#SemEval_set=TRIAL",
  transfer_set=true,
)
