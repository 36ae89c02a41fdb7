// Recipe search: ner_vanilla_glove with training words seen once mapped to OOV, so the
// OOV `tokens` vector that every new word gets is trained (glove_words.libsonnet). Dev F1 only:
// benchmarks/results/tagging.json, recipe_search.
local with_glove = import '../glove_words.libsonnet';

with_glove(import '../ner_vanilla.jsonnet', task_word_min_count=2)
