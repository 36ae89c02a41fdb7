// Continues training one of our dense LMs on a tagging task's own sentences before tagging:
// ELMo's domain transfer (Peters et al., 2018, PAPERS.md §2), applied to LD-Net's LMs.
// The model and its vocabulary are the archive's (`dense_language_model_from_archive`: AllenNLP's
// `from_archive`, refusing an archive that is not a dense LM of `direction`; + `from_files`), so
// the fine-tuned LM is a drop-in replacement in FORWARD_LM_ARCHIVE / BACKWARD_LM_ARCHIVE of
// ner_ldnet.jsonnet / chunk_ldnet.jsonnet; task words outside the LM vocabulary stay @@UNKNOWN@@.
function(archive, direction) {
  dataset_reader: { type: "dense_lm_text", max_sequence_length: 100 },
  train_data_path: std.extVar("LM_FINETUNE_TRAIN_PATH"),
  validation_data_path: std.extVar("LM_FINETUNE_DEV_PATH"),
  vocabulary: { type: "from_files", directory: archive },
  model: {
    type: "dense_language_model_from_archive",
    archive_file: archive,
    direction: direction,
  },
  data_loader: { batch_sampler: { type: "bucket", batch_size: 64, sorting_keys: ["source"] } },
  trainer: {
    num_epochs: 1,
    // a lower rate than pre-training (0.002): adapt, do not start over
    optimizer: { type: "adam", lr: 0.0005 },
    grad_norm: 5.0,
    validation_metric: "-perplexity",
    patience: 2,
    callbacks: [{ type: "console_logger", should_log_inputs: false }],
  },
}
