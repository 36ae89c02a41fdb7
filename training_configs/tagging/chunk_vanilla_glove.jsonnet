// chunk_vanilla.jsonnet with GloVe 6B 50d added to the words (glove_words.libsonnet says how): the
// no-LM twin of chunk_ldnet_glove.jsonnet (same words, characters and recipe, no r_t).
local with_glove = import 'glove_words.libsonnet';

// Words and characters from the training file only; tags from the task's inventory
// (chunk_vanilla.jsonnet, conll2000_tags.libsonnet). The shipped chunkers were trained with the words of
// every data file, test.txt's included (benchmarks/results/pruned_students.json, test_vocabulary,
// measures what that changed).
with_glove(import 'chunk_vanilla.jsonnet')
