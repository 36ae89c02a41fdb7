// ner_ldnet_glove_prune.jsonnet with the official optimiser for the layer masks (SGD, momentum 0.9,
// lr 0.015 on the batch-averaged loss; ldnet_prune.libsonnet, mask_optimizer 'sgd'), the rest of
// the tagger on its own Adam. The side-by-side with the Adam masks is in
// benchmarks/results/pruning.json (mask_optimizer_comparison); same settings as ner_ldnet_glove_prune.
local ldnet = import 'ldnet_prune.libsonnet';

ldnet.prune(
  import 'ner_ldnet_glove.jsonnet', std.extVar('NER_LDNET_GLOVE_PHASE1_DIR'), mask_optimizer='sgd'
)
