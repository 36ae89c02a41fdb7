// LD-Net phase 2 for CoNLL-00 chunking: chunk_ldnet_glove.jsonnet pruned to a budget of 2 LM layers
// (both directions together) by the task-guided penalty of ldnet_prune.libsonnet, which explains
// every setting. What this package reached: benchmarks/results/pruning.json
// (python -m benchmarks pruning --task chunk; key conll00_phase2_within_budget says whether
// a checkpoint within budget was reached).
//
// Set everything chunk_ldnet_glove.jsonnet needs, plus CHUNK_LDNET_GLOVE_PHASE1_DIR = the phase-1
// serialization dir (its vocabulary/ and best.th are used). Then export the pruned tagger:
//   allennlp ldnet-prune runs/chunk_ldnet_glove_prune/model.tar.gz -o runs/chunk_ldnet_glove_pruned.tar.gz
local ldnet = import 'ldnet_prune.libsonnet';

// Deviations from ldnet_prune's defaults, chosen on measured runs (benchmarks/results/pruning.json,
// conll00_other_phase2_runs): at LD-Net's lambda0 = 0.05 per sentence the CoNLL-00 masks stayed
// at 10 live layers for 2 epochs (mask lr 0.2; at lr 0.05 likewise after 1 epoch); at 0.2 they
// fell to 5, 4, 3 live layers over 3 epochs, one short of the budget. Chunking's task gradient
// holds its layers (a mask at exactly 1 feels no net penalty: d/dz [z(1-z) + z] = 0 at z = 1), so
// the penalty here is 10x LD-Net's.
ldnet.prune(
  import 'chunk_ldnet_glove.jsonnet',
  std.extVar('CHUNK_LDNET_GLOVE_PHASE1_DIR'),
  lambda0_per_sentence=0.5,
)
