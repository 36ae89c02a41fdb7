// Recipe search: ner_vanilla_glove without the trainable `tokens` embedding: words are
// frozen GloVe (its OOV vector trained) + characters (glove_words.libsonnet). Dev F1 only:
// benchmarks/results/tagging.json, recipe_search.
local with_glove = import '../glove_words.libsonnet';

with_glove(import '../ner_vanilla.jsonnet', task_word_min_count=0)
