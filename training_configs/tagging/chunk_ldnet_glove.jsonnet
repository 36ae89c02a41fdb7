// chunk_ldnet.jsonnet with GloVe 6B 50d added to the words (glove_words.libsonnet says how):
// v_t = [w_t; GloVe(w_t); c_t; r_t]. Optimizer, schedule and character encoder are chunk_ldnet's;
// not yet trained on the real data. Its no-LM twin is chunk_vanilla_glove.jsonnet.
local with_glove = import 'glove_words.libsonnet';

// Words and characters from the training file only; tags from the task's inventory
// (chunk_ldnet.jsonnet, conll2000_tags.libsonnet). The shipped chunkers were trained with the words of
// every data file, test.txt's included (benchmarks/results/pruned_students.json, test_vocabulary,
// measures what that changed).
with_glove(import 'chunk_ldnet.jsonnet')
