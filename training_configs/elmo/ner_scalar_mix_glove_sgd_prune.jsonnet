// LD-Net phase 2 for the scalar-mix NER tagger of the final recipe (ner_scalar_mix_glove_sgd.jsonnet):
// its dense_lm_scalar_mix pruned to a budget of 2 LM layers, both directions together, with
// exactly the recipe that made the shipped ner_pruned from the LD-Net tagger
// (../tagging/recipe/ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet): ../tagging/ldnet_prune.libsonnet's
// penalty, masks trained with Adam at lr 0.2, sticky zeros, the tagger's SGD at lr 0.006 (where
// phase 1's schedule ends), 10 epochs, the best checkpoint chosen only within budget. The mix's
// softmax weights of a removed layer are renormalised over the layers that remain
// (docs/scalar_mix.md); the L2 pull of the mixing weights stays. Phase 1's feature cache is
// bypassed here (the trained masks change the features).
//
// Set what ner_scalar_mix_glove_sgd.jsonnet needs, plus NER_SCALAR_MIX_GLOVE_PHASE1_DIR = its
// serialization dir (vocabulary/ and best.th). Then `allennlp ldnet-prune <run>/model.tar.gz
// -o pruned.tar.gz` cuts out the removed layers (python -m benchmarks scalar_mix --stage prune).
local ldnet = import '../tagging/ldnet_prune.libsonnet';

ldnet.prune(
  import 'ner_scalar_mix_glove_sgd.jsonnet',
  std.extVar('NER_SCALAR_MIX_GLOVE_PHASE1_DIR'),
  sticky_zeros=true,
  tagger_lr=0.006,
  embedder='lm',
)
