// CoNLL-2003 NER without a language model: the "no LM" baseline of LD-Net (Liu et al., 2018),
// PAPERS.md §1 (published: 90.78 ± 0.24 F1 with GloVe 100d; this config has no GloVe, so
// word embeddings are trained from scratch here; ner_vanilla_glove.jsonnet adds GloVe 6B 50d).
//
// Data: the original 4-column CoNLL-2003 files (IOB1). Set
//   CONLL03_TRAIN_DATA_PATH=../shared/data/conll2003/eng.train
//   CONLL03_DEV_DATA_PATH=../shared/data/conll2003/eng.testa
// Train: allennlp train training_configs/tagging/ner_vanilla.jsonnet -s runs/ner_vanilla --include-package ldnet_allennlp
{
  "dataset_reader": {
    // AllenNLP's CoNLL-2003 reader with every line checked (ldnet_conll2003: a line without
    // exactly 4 columns is an error naming file and line); tags are read as IOB1 and converted
    // to BIOUL (= IOBES), the scheme LD-Net trains with.
    "type": "ldnet_conll2003",
    "tag_label": "ner",
    "convert_to_coding_scheme": "BIOUL",
    "token_indexers": {
      "tokens": {"type": "single_id", "lowercase_tokens": true},
      "token_characters": {"type": "characters", "min_padding_length": 3},
    },
  },
  "train_data_path": std.extVar("CONLL03_TRAIN_DATA_PATH"),
  "validation_data_path": std.extVar("CONLL03_DEV_DATA_PATH"),
  // model selection on dev (eng.testa); `allennlp evaluate` on eng.testb gives the test F1
  "model": {
    // allennlp-models' linear-chain CRF tagger (BiLSTM emissions + CRF, Viterbi decoding), whose
    // archives default to our offline `ldnet_tagger` predictor
    "type": "ldnet_crf_tagger",
    "label_encoding": "BIOUL",
    // only transitions that are legal in BIOUL are allowed when decoding
    "constrain_crf_decoding": true,
    "calculate_span_f1": true,
    "dropout": 0.5,
    "include_start_end_transitions": false,
    "text_field_embedder": {
      "token_embedders": {
        // word embeddings w_t, trained from scratch (no GloVe here)
        "tokens": {"type": "embedding", "embedding_dim": 100, "trainable": true},
        // character-level features c_t: char CNN, 25-d chars, 50 filters of width 3
        "token_characters": {
          "type": "character_encoding",
          "embedding": {"embedding_dim": 25, "vocab_namespace": "token_characters"},
          "encoder": {"type": "cnn", "embedding_dim": 25, "num_filters": 50, "ngram_filter_sizes": [3], "conv_layer_activation": "relu"},
        },
      },
    },
    // word-level BiLSTM, 150 per direction as in LD-Net; input = 100 (words) + 50 (chars)
    "encoder": {"type": "lstm", "input_size": 150, "hidden_size": 150, "num_layers": 1, "bidirectional": true},
  },
  "data_loader": {"batch_size": 32, "shuffle": true},
  "trainer": {
    "optimizer": {"type": "adam", "lr": 0.001},
    "grad_norm": 5.0,
    "num_epochs": 20,
    "patience": 5,
    "validation_metric": "+f1-measure-overall",
    // TensorBoard logs in the serialization dir; the console logger without its dump of the
    // first batch's tensors
    "callbacks": ["tensorboard", {"type": "console_logger", "should_log_inputs": false}],
  },
}
