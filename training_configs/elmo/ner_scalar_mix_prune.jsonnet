// LD-Net phase 2 for the scalar-mix NER tagger (ner_scalar_mix.jsonnet): its dense_lm_scalar_mix
// pruned to a budget of 2 LM layers, both directions together, as
// ../tagging/recipe/ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet prunes the LD-Net tagger:
// ../tagging/ldnet_prune.libsonnet's penalty (λ0 = 0.05 per sentence · batch 64), masks trained
// with Adam at lr 0.2, sticky zeros (a mask that reaches 0 stays at 0, so a run that reaches the
// budget ends within it), 10 epochs, the best checkpoint chosen only within budget.
// The mix's softmax weights of a removed layer are renormalised over the layers that remain
// (docs/scalar_mix.md); the L2 pull of the mixing weights of phase 1 stays.
// Differences from the LD-Net recipe, and why:
// - no tagger_lr: phase 1 trains with Adam at a constant lr 0.001 (no decayed schedule to
//   resume from), so phase 2 goes on at that lr;
// - model type ldnet_crf_tagger (crf_tagger in phase 1, the same keys and weights): its metrics
//   report the masks and the within-budget metric while the layer_pruning callback trains them,
//   and its archives predict offline (`ldnet_tagger` predictor).
// Measured: benchmarks/results/scalar_mix.json (`python -m benchmarks scalar_mix --stage prune`).
//
// Set what ner_scalar_mix.jsonnet needs, plus NER_SCALAR_MIX_PHASE1_DIR = its serialization dir
// (vocabulary/ and best.th). Then `allennlp ldnet-prune <run>/model.tar.gz -o pruned.tar.gz`
// cuts out the removed layers.
local ldnet = import '../tagging/ldnet_prune.libsonnet';
local phase1 = import 'ner_scalar_mix.jsonnet';

ldnet.prune(
  phase1 + {model+: {type: 'ldnet_crf_tagger'}},
  std.extVar('NER_SCALAR_MIX_PHASE1_DIR'),
  sticky_zeros=true,
  embedder='elmo',
)
