// Recipe search (issue 13): ner_vanilla_glove trained with LD-Net's recipe (paper_recipe.libsonnet:
// SGD 0.015, momentum 0.9, lr / (1 + 0.05 · epoch), batch 10) instead of Adam 1e-3, batch 32.
// Dev F1 only: benchmarks/results/tagging.json, recipe_search.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../ner_vanilla_glove.jsonnet')
