// LD-Net phase 2 for CoNLL-00 chunking: chunk_ldnet.jsonnet pruned to a budget of 2 LM layers
// (both directions together) by the task-guided penalty of ldnet_prune.libsonnet, which explains
// every setting. What this package reached: benchmarks/results/pruning.json
// (benchmarks/pruning_benchmark.py --task chunk). Known: on CoNLL-00 the masks did not settle
// within the budget in 6 epochs (masks pushed to 0 by the penalty came back once it switched off),
// so no checkpoint counted as "best" within budget (key conll00_phase2_within_budget).
//
// Set everything chunk_ldnet.jsonnet needs, plus CHUNK_LDNET_PHASE1_DIR = the phase-1
// serialization dir (its vocabulary/ and best.th are used). Then export the pruned tagger:
//   allennlp ldnet-prune runs/chunk_ldnet_prune/model.tar.gz -o runs/chunk_ldnet_pruned.tar.gz
local ldnet = import 'ldnet_prune.libsonnet';

ldnet.prune(import 'chunk_ldnet.jsonnet', std.extVar('CHUNK_LDNET_PHASE1_DIR'))
