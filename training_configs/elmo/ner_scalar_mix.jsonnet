// CoNLL-2003 NER with our scalar-mix "ELMo" (PAPERS.md §2; Peters et al. 2018): allennlp-models'
// `ner_elmo` config (crf_tagger, char CNN, word embeddings, 2-layer BiLSTM, L2 on the scalar-mix
// weights; 92.51 test F1 with the real 93.6M-parameter ELMo) with ONLY these changes:
//   1. dataset_reader.token_indexers.elmo:   elmo_characters       -> dense_lm_tokens
//   2. model.text_field_embedder...elmo:     elmo_token_embedder   -> dense_lm_scalar_mix
//   3. model.encoder.input_size:             1202 (50+1024+128)    -> 434 (50+256+128)
// plus what this offline AllenNLP 2.10 machine needs: no GloVe file (word embeddings trained from
// scratch), data paths from our variables (model selection on eng.testa, not on the test set),
// `convert_to_coding_scheme` for the deprecated `coding_scheme`, `keep_most_recent_by_count` for
// the removed `num_serialized_models_to_keep`, and the console logger without its tensor dump.
// docs/scalar_mix.md shows the swapped blocks side by side.
//
// Our biLM is two dense LMs (training_configs/lm/, 6 x 128 dense layers over 128-d words), so the
// mix has 7 layers of 2 x 128 = 256 features (ELMo: 3 layers of 1024).
//
//   FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz BACKWARD_LM_ARCHIVE=runs/lm_backward/model.tar.gz \
//   CONLL03_TRAIN_DATA_PATH=../shared/data/conll2003/eng.train \
//   CONLL03_DEV_DATA_PATH=../shared/data/conll2003/eng.testa \
//   allennlp train training_configs/elmo/ner_scalar_mix.jsonnet -s runs/elmo/ner_scalar_mix \
//     --include-package ldnet_allennlp
// Test F1 / speed: python -m benchmarks scalar_mix -> benchmarks/results/scalar_mix.json.
{
  "dataset_reader": {
    // AllenNLP's CoNLL-2003 reader; IOB1 tags converted to BIOUL
    "type": "conll2003",
    "tag_label": "ner",
    "convert_to_coding_scheme": "BIOUL",
    "token_indexers": {
      // lowercased word ids (task vocabulary)
      "tokens": {"type": "single_id", "lowercase_tokens": true},
      // characters for the char CNN
      "token_characters": {"type": "characters", "min_padding_length": 3},
      // SWAPPED (was {"type": "elmo_characters"}): ids in the LMs' own word vocabulary (cased, as
      // the LM corpus), which the dense_lm_scalar_mix embedder copies into the namespace
      // "lm_tokens" of the task vocabulary
      "elmo": {"type": "dense_lm_tokens", "lm_archive": std.extVar("FORWARD_LM_ARCHIVE")},
    },
  },
  "train_data_path": std.extVar("CONLL03_TRAIN_DATA_PATH"),
  "validation_data_path": std.extVar("CONLL03_DEV_DATA_PATH"),
  "model": {
    // allennlp-models' CRF tagger (ldnet_crf_tagger is the same with an offline predictor)
    "type": "crf_tagger",
    "label_encoding": "BIOUL",
    "dropout": 0.5,
    "include_start_end_transitions": false,
    "text_field_embedder": {
      "token_embedders": {
        // 50-d word embeddings (upstream: GloVe 6B 50d, not available offline)
        "tokens": {"type": "embedding", "embedding_dim": 50, "trainable": true},
        // SWAPPED (was elmo_token_embedder with options_file / weight_file):
        // gamma * sum_j softmax(s)_j * [h_j_fwd; h_j_bwd] over the frozen dense LMs
        "elmo": {
          "type": "dense_lm_scalar_mix",
          "forward_lm_archive": std.extVar("FORWARD_LM_ARCHIVE"),
          "backward_lm_archive": std.extVar("BACKWARD_LM_ARCHIVE"),
          "do_layer_norm": false,
          "dropout": 0.0,
        },
        // char CNN: 16-d characters, 128 filters of width 3
        "token_characters": {
          "type": "character_encoding",
          "embedding": {"embedding_dim": 16},
          "encoder": {"type": "cnn", "embedding_dim": 16, "num_filters": 128, "ngram_filter_sizes": [3], "conv_layer_activation": "relu"},
        },
      },
    },
    // 2-layer BiLSTM; SWAPPED input_size: 50 (words) + 256 (scalar mix) + 128 (chars)
    "encoder": {"type": "lstm", "input_size": 434, "hidden_size": 200, "num_layers": 2, "dropout": 0.5, "bidirectional": true},
    // L2 pull of the mixing weights s toward 0, i.e. toward the plain average of the layers
    "regularizer": {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]},
  },
  "data_loader": {"batch_size": 64},
  "trainer": {
    "optimizer": {"type": "adam", "lr": 0.001},
    "checkpointer": {"keep_most_recent_by_count": 3},
    "validation_metric": "+f1-measure-overall",
    "num_epochs": 75,
    "grad_norm": 5.0,
    "patience": 25,
    "callbacks": [{"type": "console_logger", "should_log_inputs": false}],
  },
}
