// LD-Net phase 2 for the SGD-recipe chunker with a stronger L1 term (a deviation from LD-Net):
// recipe/chunk_ldnet_glove_sgd_prune_sticky.jsonnet (λ0 = 0.5 per sentence, masks with Adam at
// lr 0.2, sticky zeros) ended its three epochs with 4, 3, 3 live layers (budget 2), three masks
// held at exactly 1: there the official penalty's slope over budget is λ0 (1 − 2z) + λ0 = 0, and
// the task gradient (measured at the phase-1 weights: per-batch means −0.6 to +0.3, standard
// deviations 0.8 to 2.5, against λ0 = 5 per batch of 10) pushes a mask it needs up against the
// clamp. reg1_scale = 1.2 gives the L1 term a slope of 0.2 λ0 = 1.0 per batch at z = 1, so the
// mask the task needs least leaves 1 first; below the budget the L1 term is off and reg3 returns
// masks above 0.5 to 1. Whether it ends within budget, and its dev F1, are in
// benchmarks/results/pruning.json (the config name is the run's key).
//
// Set what chunk_ldnet_glove_sgd.jsonnet needs, plus CHUNK_LDNET_GLOVE_PHASE1_DIR = its
// serialization dir. python -m benchmarks pruning --task chunk --config
// recipe/chunk_ldnet_glove_sgd_prune_l1 --phase1-dir runs/tagging/chunk_ldnet_glove_sgd does
// phase 2, the export and the test F1.
local ldnet = import '../ldnet_prune.libsonnet';

ldnet.prune(
  import 'chunk_ldnet_glove_sgd.jsonnet',
  std.extVar('CHUNK_LDNET_GLOVE_PHASE1_DIR'),
  lambda0_per_sentence=0.5,
  sticky_zeros=true,
  reg1_scale=1.2,
)
