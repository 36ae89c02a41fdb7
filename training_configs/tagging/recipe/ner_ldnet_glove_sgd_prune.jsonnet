// LD-Net phase 2 for the NER tagger trained with LD-Net's SGD recipe (ner_ldnet_glove_sgd.jsonnet):
// pruned to a budget of 2 LM layers by ldnet_prune.libsonnet's penalty (every setting explained
// there). The tagger keeps its SGD recipe (lr 0.015, momentum 0.9, batch 10, λ0 = 0.05 · 10); the
// masks train with Adam at lr 0.2, the mask optimisation that reached the budget within an epoch
// for ner_ldnet_glove_prune, where SGD masks (ner_ldnet_glove_prune_sgd_masks) still had all
// 12 layers live after one epoch (benchmarks/results/pruning.json, other_phase2_runs).
//
// Set what ner_ldnet_glove_sgd.jsonnet needs, plus NER_LDNET_GLOVE_PHASE1_DIR = its
// serialization dir (vocabulary/ and best.th). python -m benchmarks pruning --task ner
// --config recipe/ner_ldnet_glove_sgd_prune --phase1-dir runs/tagging/ner_ldnet_glove_sgd does
// phase 2, the export and the test F1.
local ldnet = import '../ldnet_prune.libsonnet';

ldnet.prune(import 'ner_ldnet_glove_sgd.jsonnet', std.extVar('NER_LDNET_GLOVE_PHASE1_DIR'))
