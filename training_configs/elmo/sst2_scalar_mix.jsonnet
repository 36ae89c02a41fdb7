// GLUE SST-2 sentiment with AllenNLP's `basic_classifier` and our scalar-mix "ELMo" embedder
// (PAPERS.md §2): the usual ELMo classifier shape (word embeddings + ELMo -> BiLSTM -> linear),
// where the `elmo` indexer and embedder blocks are ours (see docs/scalar_mix.md).
//
//   SST2_TRAIN_DATA_PATH=../shared/data/sst2/train.tsv SST2_DEV_DATA_PATH=../shared/data/sst2/dev.tsv
//   (`sentence<TAB>label` with a header)
//   FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz BACKWARD_LM_ARCHIVE=runs/lm_backward/model.tar.gz
//   allennlp train training_configs/elmo/sst2_scalar_mix.jsonnet -s runs/elmo/sst2_scalar_mix \
//     --include-package ldnet_allennlp
{
  "dataset_reader": {
    // the distillation package's GLUE TSV reader (header line; `sentence`, `label` columns)
    "type": "distillation_tsv",
    "token_indexers": {
      "tokens": {"type": "single_id", "lowercase_tokens": true},
      // ids in the dense LMs' own word vocabulary (copied into the namespace "lm_tokens" by the
      // dense_lm_scalar_mix embedder)
      "elmo": {"type": "dense_lm_tokens", "lm_archive": std.extVar("FORWARD_LM_ARCHIVE")},
    },
  },
  "train_data_path": std.extVar("SST2_TRAIN_DATA_PATH"),
  "validation_data_path": std.extVar("SST2_DEV_DATA_PATH"),
  "model": {
    "type": "basic_classifier",
    "text_field_embedder": {
      "token_embedders": {
        // 50-d word embeddings trained from scratch
        "tokens": {"type": "embedding", "embedding_dim": 50, "trainable": true},
        // gamma * sum_j softmax(s)_j * [h_j_fwd; h_j_bwd] over the frozen dense LMs
        "elmo": {
          "type": "dense_lm_scalar_mix",
          "forward_lm_archive": std.extVar("FORWARD_LM_ARCHIVE"),
          "backward_lm_archive": std.extVar("BACKWARD_LM_ARCHIVE"),
          "do_layer_norm": false,
          "dropout": 0.5,
        },
      },
    },
    // BiLSTM over 50 (words) + 256 (scalar mix), final states of both directions
    "seq2vec_encoder": {"type": "lstm", "input_size": 306, "hidden_size": 150, "bidirectional": true},
    "dropout": 0.3,
    // L2 pull of the mixing weights s toward the plain average of the layers
    "regularizer": {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]},
  },
  "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": 64, "sorting_keys": ["tokens"]}},
  "trainer": {
    "optimizer": {"type": "adam", "lr": 0.001},
    "num_epochs": 5,
    "patience": 2,
    "grad_norm": 5.0,
    "validation_metric": "+accuracy",
    "callbacks": [{"type": "console_logger", "should_log_inputs": false}],
  },
}
