// The LD-Net NER tagger (the final NER config): ner_ldnet_glove (GloVe 50d + char CNN + LD-Net
// features of the shipped LMs) trained with LD-Net's recipe (paper_recipe.libsonnet: SGD 0.015,
// momentum 0.9, lr / (1 + 0.05 · epoch), batch 10, gradient clipping 5), 30 epochs, patience 5.
// What chose it, on CoNLL-03 dev (eng.testa) F1 (benchmarks/results/tagging.json, recipe_search):
// - the recipe: SGD reached 94.19 (epoch 30 of 30, still rising) against 92.93 for Adam 1e-3 /
//   batch 32 (ner_ldnet_glove, best at epoch 4, then falling); with the no-LM tagger SGD reached
//   93.70 against 92.10;
// - the characters: the char CNN (92.10 with Adam) over the char BiLSTM (91.56);
// - the words: every training word keeps its own vector next to GloVe (92.10) over min_count 2
//   (92.16, within noise, with fewer parameters) and over GloVe alone (91.09).
// - the LMs: the shipped ones, not fine-tuned on CoNLL-03 text: fine-tuning them on eng.train
//   (python -m benchmarks lm_finetune, tagging.json lm_finetune_study) lowered their eng.testa
//   perplexity 107/104 -> 93/91 but gave a mean dev F1 over epochs 5-8 of 91.82 against
//   92.26 / 92.41 for the two seeds on the shipped LMs (a first pair with AllenNLP's default
//   trainer, two seeds, gave 92.37 / 92.20: lm_finetune_study_default_trainer).
// Its no-LM twin is ner_vanilla_glove_sgd.jsonnet.
local paper_recipe = import 'paper_recipe.libsonnet';

paper_recipe(import '../ner_ldnet_glove.jsonnet', num_epochs=30)
