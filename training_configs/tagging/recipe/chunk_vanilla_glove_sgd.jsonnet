// chunk_vanilla_glove trained with LD-Net's recipe (paper_recipe.libsonnet): the no-LM twin of
// chunk_ldnet_glove_sgd.jsonnet (same words, characters, recipe and epochs). Dev F1 per epoch:
// benchmarks/results/tagging.json, recipe_search.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../chunk_vanilla_glove.jsonnet', num_epochs=20)
