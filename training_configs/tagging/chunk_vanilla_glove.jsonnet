// chunk_vanilla.jsonnet with GloVe 6B 50d added to the words (glove_words.libsonnet says how): the
// no-LM twin of chunk_ldnet_glove.jsonnet (same words, characters and recipe, no r_t).
local with_glove = import 'glove_words.libsonnet';

// The vocabulary from every data file, as chunk_vanilla.jsonnet (glove_words.libsonnet says why).
with_glove(import 'chunk_vanilla.jsonnet', train_vocab_only=false)
