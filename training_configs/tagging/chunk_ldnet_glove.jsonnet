// chunk_ldnet.jsonnet with GloVe 6B 50d added to the words (glove_words.libsonnet says how):
// v_t = [w_t; GloVe(w_t); c_t; r_t]. Optimizer, schedule and character encoder are chunk_ldnet's;
// not yet trained on the real data. Its no-LM twin is chunk_vanilla_glove.jsonnet.
local with_glove = import 'glove_words.libsonnet';

// The vocabulary from every data file, as chunk_ldnet.jsonnet (glove_words.libsonnet says why).
with_glove(import 'chunk_ldnet.jsonnet', train_vocab_only=false)
