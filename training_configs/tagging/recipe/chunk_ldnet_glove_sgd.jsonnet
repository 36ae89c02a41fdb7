// The LD-Net chunker (the final chunking config): chunk_ldnet_glove (GloVe 50d + char CNN +
// LD-Net features of the shipped LMs) trained with LD-Net's recipe (paper_recipe.libsonnet: SGD
// 0.015, momentum 0.9, lr / (1 + 0.05 · epoch), batch 10, gradient clipping 5), 20 epochs,
// patience 5. Model picked on the held-out tenth of CoNLL-00 train.txt (every 10th sentence,
// chunk_ldnet.jsonnet); test.txt is read only by `allennlp evaluate`. What chose it, on that dev
// (benchmarks/results/tagging.json, recipe_search): 95.54 at epoch 19 of 20 against 94.43 for
// Adam 1e-3 / batch 32 (chunk_ldnet_glove, 3 epochs; the NER search had shown Adam peaking early
// and falling, recipe/ner_ldnet_glove_sgd.jsonnet). Its no-LM twin is chunk_vanilla_glove_sgd.
// The LMs are the shipped ones, not fine-tuned on CoNLL-00 text: fine-tuning them on train.txt
// without the dev tenth (python -m benchmarks lm_finetune, tagging.json lm_finetune_study)
// lowered their dev-tenth perplexity 109/108 -> 86/84 but gave best dev F1 95.39 (mean over
// epochs 11-20: 95.09) against 95.54 / 95.46 (95.23 / 95.26) on the shipped LMs (a first pair
// with AllenNLP's default trainer, two seeds, gave 95.31 / 95.43: lm_finetune_study_default_trainer).
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../chunk_ldnet_glove.jsonnet', num_epochs=20)
