// ner_ldnet_glove trained with LD-Net's recipe (paper_recipe.libsonnet: SGD 0.015, momentum 0.9,
// lr / (1 + 0.05 · epoch), batch 10, gradient clipping 5), chosen on CoNLL-03 dev in issue 13's
// recipe search: with the no-LM tagger, this recipe reached 93.17 dev F1 at epoch 8 and was still
// rising, against 92.10 for Adam 1e-3 / batch 32 (best of 11 epochs; dev then fell); the char
// BiLSTM in place of the char CNN reached 91.56 (benchmarks/results/tagging.json, recipe_search).
// This config itself, stopped by the session after 16 of its 30 epochs: 93.33 dev F1 at epoch 16,
// still rising, against 92.93 for ner_ldnet_glove (Adam; best at epoch 4, then falling); SGD
// overtook Adam at epoch 13. Not final: the test file has not been read for it.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../ner_ldnet_glove.jsonnet', num_epochs=30)
