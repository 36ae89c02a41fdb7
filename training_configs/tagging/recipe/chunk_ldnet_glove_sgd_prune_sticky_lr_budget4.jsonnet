// LD-Net phase 2 for the SGD-recipe chunker at a budget of 4 live LM layers:
// chunk_ldnet_glove_sgd_prune_sticky_lr.jsonnet (λ0 = 0.5 per sentence, sticky zeros, masks with
// Adam at lr 0.2, the tagger's SGD from lr 0.0077, 10 epochs) with LD-Net's budget λ1 = 4 instead
// of 2.
// Why, measured side by side from the shipped chunker, 10 epochs each
// (python -m benchmarks pruning_budget --task chunk --budgets B --epochs 10 --tagger-lr 0.0077
// --no-speed, B = 2, 3, 4; benchmarks/results/pruning_budget.json): dev F1 (the held-out tenth of
// train.txt) of the pruned chunker against the phase-1 chunker's 95.54: budget 2 lost 0.58
// (forward [1], backward [4]), budget 3 lost 0.32 (forward [1, 4], backward [4]), budget 4 lost
// 0.28 (forward [0, 1, 4], backward [4]). The benchmark's rule, the smallest budget that loses at
// most 0.3 dev F1, chose budget 4; its FLOPs per token are 3.13x fewer than the phase-1 chunker's
// (4.84x at budget 2). As in LD-Net, where the pruned chunker kept about twice the pruned NER
// tagger's FLOPs, chunking needs more of the LMs than NER does.
//
// Set what chunk_ldnet_glove_sgd.jsonnet needs, plus CHUNK_LDNET_GLOVE_PHASE1_DIR = its
// serialization dir (python -m benchmarks pruning_budget builds one from a tagger archive).
local ldnet = import '../ldnet_prune.libsonnet';

ldnet.prune(
  import 'chunk_ldnet_glove_sgd.jsonnet',
  std.extVar('CHUNK_LDNET_GLOVE_PHASE1_DIR'),
  lambda0_per_sentence=0.5,
  budget=4,
  sticky_zeros=true,
  tagger_lr=0.0077,
)
