// CoNLL-2000 chunking with LD-Net contextual features (Liu et al., EMNLP 2018, PAPERS.md §1):
// chunk_vanilla.jsonnet plus r_t = ReLU(W_cr · dropout([h_t; h^r_t]) + b_cr) from our frozen forward
// and backward dense LMs (`layer_selection` embedder). Published: 96.01 ± 0.07 F1 unpruned (no LM:
// 94.42). What this config reached: benchmarks/results/tagging.json, key conll00_test_f1_ldnet.
// Same deviations from the paper as ner_ldnet.jsonnet (smaller LMs, word embeddings from scratch,
// char CNN, Adam); the only difference to chunk_vanilla is r_t.
//
// Data: NLTK's original CoNLL-2000 files (3 columns `word POS chunk`, IOB2). CoNLL-2000 has no dev
// set, so one training sentence in ten (sentence i with i % 10 == 9, in file order: 893 of 8,936)
// is held out for model selection by the `ldnet_conll2000` reader (`holdout: "exclude"` when
// training, `holdout: "only"` for validation, both reading train.txt; other files are read
// whole). Set
//   CONLL00_TRAIN_DATA_PATH=../shared/data/conll2000/train.txt
//   FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz BACKWARD_LM_ARCHIVE=runs/lm_backward/model.tar.gz
// Train: allennlp train training_configs/tagging/chunk_ldnet.jsonnet -s runs/chunk_ldnet --include-package ldnet_allennlp
// Test F1: allennlp evaluate runs/chunk_ldnet/model.tar.gz ../shared/data/conll2000/test.txt --include-package ldnet_allennlp
// (python -m benchmarks tagging does both and records the result in benchmarks/results/tagging.json.)
local train_path = std.extVar("CONLL00_TRAIN_DATA_PATH");
local reader(holdout) = {
  // allennlp-models' CoNLL-2000 reader with every line checked and the hold-out split;
  // IOB2 chunk tags converted to BIOUL (= IOBES), the scheme LD-Net trains with.
  "type": "ldnet_conll2000",
  "tag_label": "chunk",
  "convert_to_coding_scheme": "BIOUL",
  "holdout": holdout,
  "holdout_every": 10,
  // the split applies to train.txt only: any other file (test.txt) is read whole
  "holdout_path": train_path,
  "token_indexers": {
    "tokens": {"type": "single_id", "lowercase_tokens": true},
    "token_characters": {"type": "characters", "min_padding_length": 3},
    // ids in the LMs' own (cased) word vocabulary; unknown words -> the LM's OOV id
    "lm": {"type": "dense_lm_tokens", "lm_archive": std.extVar("FORWARD_LM_ARCHIVE")},
  },
};
{
  "dataset_reader": reader("exclude"),
  // the held-out tenth of train.txt (`allennlp evaluate` on test.txt reads all of it)
  "validation_dataset_reader": reader("only"),
  "train_data_path": train_path,
  "validation_data_path": train_path,
  // the label vocabulary: the task's whole tag inventory (no test file is read)
  "vocabulary": {"type": "from_instances", "tokens_to_add": {"labels": import 'conll2000_tags.libsonnet'}},
  "model": {
    "type": "ldnet_crf_tagger",
    "label_encoding": "BIOUL",
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
        // r_t: LD-Net features of the frozen LMs, [h_t; h^r_t] -> 100
        "lm": {
          "type": "layer_selection",
          "forward_lm_archive": std.extVar("FORWARD_LM_ARCHIVE"),
          "backward_lm_archive": std.extVar("BACKWARD_LM_ARCHIVE"),
          "projection_dim": 100,
          "dropout": 0.5,
          "trainable_layer_mask": false,
        },
      },
    },
    // word-level BiLSTM, 150 per direction as in LD-Net; input = 100 (w) + 50 (c) + 100 (r)
    "encoder": {"type": "lstm", "input_size": 250, "hidden_size": 150, "num_layers": 1, "bidirectional": true},
  },
  "data_loader": {"batch_size": 32, "shuffle": true},
  "trainer": {
    "optimizer": {"type": "adam", "lr": 0.001},
    "grad_norm": 5.0,
    "num_epochs": 20,
    "patience": 5,
    "validation_metric": "+f1-measure-overall",
    "callbacks": ["tensorboard", {"type": "console_logger", "should_log_inputs": false}],
  },
}
