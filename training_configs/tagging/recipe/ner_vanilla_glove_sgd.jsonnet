// The no-LM twin of ner_ldnet_glove_sgd.jsonnet (the final pair): ner_vanilla_glove (GloVe
// 50d + char CNN, no LM) with the same recipe (paper_recipe.libsonnet: SGD 0.015, momentum 0.9,
// lr / (1 + 0.05 · epoch), batch 10, gradient clipping 5; patience 5). On CoNLL-03 dev (eng.testa):
// 93.70 at epoch 15, stopped by its patience at epoch 20, against 92.10 for Adam 1e-3 / batch 32
// (benchmarks/results/tagging.json, recipe_search). Up to 30 epochs, as its twin.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../ner_vanilla_glove.jsonnet', num_epochs=30)
