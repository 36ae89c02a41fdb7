// LD-Net phase 2 for CoNLL-00 chunking: chunk_ldnet_glove.jsonnet pruned to a budget of 2 LM layers
// (both directions together) by the task-guided penalty of ldnet_prune.libsonnet, which explains
// every setting. What this package reached: benchmarks/results/pruning.json
// (benchmarks/pruning_benchmark.py --task chunk; key conll00_phase2_within_budget says whether
// a checkpoint within budget was reached).
//
// Set everything chunk_ldnet_glove.jsonnet needs, plus CHUNK_LDNET_GLOVE_PHASE1_DIR = the phase-1
// serialization dir (its vocabulary/ and best.th are used). Then export the pruned tagger:
//   allennlp ldnet-prune runs/chunk_ldnet_glove_prune/model.tar.gz -o runs/chunk_ldnet_glove_pruned.tar.gz
local ldnet = import 'ldnet_prune.libsonnet';

// masks' learning rate: ldnet_prune's default 0.2, as for NER. At 0.05 (what chunk_ldnet_prune
// uses: with the earlier, weaker LMs 0.2 made the masks bounce) only 2 of the 12 masks had reached
// 0 after one epoch (benchmarks/results/pruning.json, conll00_other_phase2_runs).
ldnet.prune(import 'chunk_ldnet_glove.jsonnet', std.extVar('CHUNK_LDNET_GLOVE_PHASE1_DIR'))
