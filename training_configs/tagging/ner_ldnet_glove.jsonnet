// ner_ldnet.jsonnet with GloVe 6B 50d added to the words (glove_words.libsonnet says how):
// v_t = [w_t; GloVe(w_t); c_t; r_t]. Optimizer, schedule and character encoder are ner_ldnet's
// (Adam 1e-3, batch 32, char CNN); the paper's SGD recipe has not been compared on dev yet.
// Its dev F1 per epoch and test F1: benchmarks/results/tagging.json, key ner_ldnet_glove (dev F1
// peaked at epoch 4 and fell after it at this constant learning rate).
// Its no-LM twin is ner_vanilla_glove.jsonnet (same words, characters and recipe).
local with_glove = import 'glove_words.libsonnet';

with_glove(import 'ner_ldnet.jsonnet')
