// CoNLL-2000 chunking without a language model: the "no LM" baseline of LD-Net (Liu et al., 2018),
// PAPERS.md §1 (published: 94.42 ± 0.08 F1 with GloVe 100d; this config has no GloVe, so
// word embeddings are trained from scratch here; chunk_vanilla_glove.jsonnet adds GloVe 6B 50d). Same model and budget as ner_vanilla.jsonnet.
//
// Data: NLTK's original CoNLL-2000 files (3 columns `word POS chunk`, IOB2). CoNLL-2000 has no dev
// set, so one training sentence in ten (sentence i with i % 10 == 9, in file order: 893 of 8,936)
// is held out for model selection by the `ldnet_conll2000` reader (`holdout: "exclude"` when
// training, `holdout: "only"` for validation, both reading train.txt; other files are read
// whole). Set
//   CONLL00_TRAIN_DATA_PATH=../shared/data/conll2000/train.txt
// Train: allennlp train training_configs/tagging/chunk_vanilla.jsonnet -s runs/chunk_vanilla --include-package ldnet_allennlp
// Test F1: allennlp evaluate runs/chunk_vanilla/model.tar.gz ../shared/data/conll2000/test.txt --include-package ldnet_allennlp
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
    "callbacks": ["tensorboard", {"type": "console_logger", "should_log_inputs": false}],
  },
}
