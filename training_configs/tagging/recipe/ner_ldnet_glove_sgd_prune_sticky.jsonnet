// LD-Net phase 2 for the SGD-recipe NER tagger (ner_ldnet_glove_sgd.jsonnet), budget 2 LM layers,
// with one deviation from ner_ldnet_glove_sgd_prune.jsonnet (same penalty, λ0 = 0.05 · 10, masks
// with Adam at lr 0.2): sticky_zeros, a mask that reaches 0 stays at 0 (ldnet_prune.libsonnet).
// Why: without it the masks came back to life and no epoch ended within the budget (live layers
// 4, 5, 3 after epochs 0-2, though 2 were live mid-epoch: benchmarks/results/pruning.json).
// The two are compared on dev F1 (eng.testa) side by side in pruning.json (other_phase2_runs).
//
// Set what ner_ldnet_glove_sgd.jsonnet needs, plus NER_LDNET_GLOVE_PHASE1_DIR = its
// serialization dir. python -m benchmarks pruning --task ner --config
// recipe/ner_ldnet_glove_sgd_prune_sticky --phase1-dir runs/tagging/ner_ldnet_glove_sgd does
// phase 2, the export and the test F1.
local ldnet = import '../ldnet_prune.libsonnet';

ldnet.prune(
  import 'ner_ldnet_glove_sgd.jsonnet',
  std.extVar('NER_LDNET_GLOVE_PHASE1_DIR'),
  sticky_zeros=true,
)
