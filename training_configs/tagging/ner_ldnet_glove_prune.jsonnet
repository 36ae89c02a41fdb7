// LD-Net phase 2 for CoNLL-03 NER: ner_ldnet_glove.jsonnet pruned to a budget of 2 LM layers (both
// directions together) by the task-guided penalty of ldnet_prune.libsonnet, which explains every
// setting. Published: 51M -> 5M FLOPs/token, 91.86 -> 91.84 F1 (CoNLL-03). What this package
// reached: benchmarks/results/pruning.json (python -m benchmarks pruning --task ner).
//
// Set everything ner_ldnet_glove.jsonnet needs, plus NER_LDNET_GLOVE_PHASE1_DIR = the phase-1 serialization
// dir (its vocabulary/ and best.th are used). Then export the physically pruned tagger:
//   allennlp ldnet-prune runs/ner_ldnet_glove_prune/model.tar.gz -o runs/ner_ldnet_glove_pruned.tar.gz
local ldnet = import 'ldnet_prune.libsonnet';

ldnet.prune(import 'ner_ldnet_glove.jsonnet', std.extVar('NER_LDNET_GLOVE_PHASE1_DIR'))
