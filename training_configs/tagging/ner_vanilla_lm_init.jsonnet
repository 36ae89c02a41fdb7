// ner_vanilla.jsonnet with its word embeddings initialised from the forward dense LM's
// (lm_word_vectors.libsonnet says how and why; LM_WORD_VECTORS names the vectors file).
local with_lm_word_vectors = import 'lm_word_vectors.libsonnet';

with_lm_word_vectors(import 'ner_vanilla.jsonnet')
