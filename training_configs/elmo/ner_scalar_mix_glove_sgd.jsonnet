// The scalar-mix "ELMo" with the final NER recipe (the scalar_mix study, python -m benchmarks
// scalar_mix): ../tagging/recipe/ner_ldnet_glove_sgd.jsonnet (GloVe 6B 50d + char CNN + the
// shipped LMs' features, word BiLSTM 150, CRF; LD-Net's SGD recipe: lr 0.015, momentum 0.9,
// lr / (1 + 0.05 · epoch), batch 10, clipping 5, 30 epochs, patience 5) with ONLY its "lm"
// embedder swapped, so the two taggers differ in how they read the same frozen LMs:
//   ner_ldnet_glove_sgd: r_t = ReLU(W_cr · dropout([h_t; h^r_t]) + b_cr)          (layer_selection)
//   this config:         r_t = W · dropout(γ · Σ_j softmax(s)_j · [h_j; h^r_j])   (dense_lm_scalar_mix)
// Both project to 100 features with dropout 0.5 (same word BiLSTM input); the mixing weights s
// get ner_elmo's L2 pull toward the plain average. The frozen LMs' features are computed once per
// sentence (the lm_feature_cache callback), which changes nothing but the time an epoch takes.
// Its no-LM twin is ../tagging/recipe/ner_vanilla_glove_sgd.jsonnet.
local ldnet = import '../tagging/recipe/ner_ldnet_glove_sgd.jsonnet';

ldnet + {
  model+: {
    text_field_embedder+: {token_embedders+: {
      lm: {
        type: 'dense_lm_scalar_mix',
        forward_lm_archive: std.extVar('FORWARD_LM_ARCHIVE'),
        backward_lm_archive: std.extVar('BACKWARD_LM_ARCHIVE'),
        dropout: 0.5,
        projection_dim: 100,
      },
    }},
    regularizer: {regexes: [['scalar_parameters', {type: 'l2', alpha: 0.1}]]},
  },
  trainer+: {callbacks+: ['lm_feature_cache']},
}
