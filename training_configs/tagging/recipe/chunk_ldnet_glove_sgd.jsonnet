// chunk_ldnet_glove trained with LD-Net's recipe (paper_recipe.libsonnet: SGD 0.015, momentum 0.9,
// lr / (1 + 0.05 · epoch), batch 10, gradient clipping 5), the recipe chosen on CoNLL-03 dev for
// NER (recipe/ner_ldnet_glove_sgd.jsonnet says by how much). Model picked on the held-out tenth of
// CoNLL-00 train.txt (every 10th sentence, chunk_ldnet.jsonnet); test.txt is read only by
// `allennlp evaluate`. Its dev F1 per epoch: benchmarks/results/tagging.json, recipe_search
// (chunk_ldnet_glove with Adam: 94.43 at epoch 3 of 3, still rising).
// Its no-LM twin is chunk_vanilla_glove_sgd.jsonnet.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../chunk_ldnet_glove.jsonnet', num_epochs=20)
