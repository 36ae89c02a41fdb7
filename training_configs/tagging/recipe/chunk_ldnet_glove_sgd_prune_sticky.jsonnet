// LD-Net phase 2 for the SGD-recipe chunker (chunk_ldnet_glove_sgd.jsonnet), budget 2 LM layers:
// the penalty of chunk_ldnet_glove_prune.jsonnet (λ0 = 0.5 per sentence, 10x LD-Net's, which
// left the CoNLL-00 masks where they were; that file says what was measured), masks with Adam at
// lr 0.2, and sticky_zeros (a mask that reaches 0 stays at 0, ldnet_prune.libsonnet), as for NER
// (recipe/ner_ldnet_glove_sgd_prune_sticky.jsonnet): on the Adam chunker this penalty ended
// within budget without it, but masks that come back to life left the SGD NER tagger over budget.
//
// Set what chunk_ldnet_glove_sgd.jsonnet needs, plus CHUNK_LDNET_GLOVE_PHASE1_DIR = its
// serialization dir. python -m benchmarks pruning --task chunk --config
// recipe/chunk_ldnet_glove_sgd_prune_sticky --phase1-dir runs/tagging/chunk_ldnet_glove_sgd does
// phase 2, the export and the test F1.
local ldnet = import '../ldnet_prune.libsonnet';

ldnet.prune(
  import 'chunk_ldnet_glove_sgd.jsonnet',
  std.extVar('CHUNK_LDNET_GLOVE_PHASE1_DIR'),
  lambda0_per_sentence=0.5,
  sticky_zeros=true,
)
