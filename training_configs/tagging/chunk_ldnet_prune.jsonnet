// LD-Net phase 2 for CoNLL-00 chunking: chunk_ldnet.jsonnet pruned to a budget of 2 LM layers
// (both directions together) by the task-guided penalty of ldnet_prune.libsonnet, which explains
// every setting. What this package reached: benchmarks/results/pruning.json
// (python -m benchmarks pruning --task chunk; key conll00_phase2_within_budget says whether
// a checkpoint within budget was reached).
//
// Set everything chunk_ldnet.jsonnet needs, plus CHUNK_LDNET_PHASE1_DIR = the phase-1
// serialization dir (its vocabulary/ and best.th are used). Then export the pruned tagger:
//   allennlp ldnet-prune runs/chunk_ldnet_prune/model.tar.gz -o runs/chunk_ldnet_pruned.tar.gz
local ldnet = import 'ldnet_prune.libsonnet';

// masks' learning rate 0.05: at ldnet_prune's 0.2 the CoNLL-00 masks bounced between 0 and 1
// for 6 epochs and never stayed within the budget
ldnet.prune(import 'chunk_ldnet.jsonnet', std.extVar('CHUNK_LDNET_PHASE1_DIR'), mask_lr=0.05)
