// chunk_vanilla_glove trained with LD-Net's recipe (paper_recipe.libsonnet): the no-LM twin of
// chunk_ldnet_glove_sgd.jsonnet (same words, characters, recipe and epochs). On the held-out tenth
// of CoNLL-00 train.txt: 93.86 at epoch 18 of 20 (benchmarks/results/tagging.json, recipe_search),
// against 95.54 for its LD-Net twin.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../chunk_vanilla_glove.jsonnet', num_epochs=20)
