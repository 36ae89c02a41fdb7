// The scalar-mix "ELMo" in the LD-Net tagger's shape, for the equal-budget comparison
// (python -m benchmarks scalar_mix): training_configs/tagging/ner_ldnet.jsonnet with ONLY its
// "lm" embedder swapped, so that the two taggers differ in how they read the same frozen LMs:
//   ner_ldnet:   r_t = ReLU(W_cr · dropout([h_t; h^r_t]) + b_cr)            (layer_selection)
//   this config: r_t = W · dropout(γ · Σ_j softmax(s)_j · [h_j; h^r_j])    (dense_lm_scalar_mix)
// Both project to 100 features with dropout 0.5, so the word BiLSTM's input_size stays 250; the
// mixing weights s get ner_elmo's L2 pull toward uniform. Same variables as ner_ldnet.jsonnet.
// (For the drop-in proof in allennlp-models' ner_elmo shape, see ner_scalar_mix.jsonnet.)
local ldnet = import '../tagging/ner_ldnet.jsonnet';

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
}
