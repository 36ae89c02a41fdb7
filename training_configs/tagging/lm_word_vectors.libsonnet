// `with_lm_word_vectors(config)`: a tagging config whose word embeddings w_t start from the forward
// dense LM's input embeddings instead of at random: pretrained word vectors
// without GloVe. Used to measure how much of the gap to the published F1 comes from having no
// pretrained word vectors (python -m benchmarks tagging --runs ner_ldnet_lm_init ...).
//
// Everything else is the given config. w_t becomes 128-d (the LM's embedding dim) and the word
// BiLSTM's input grows by the difference. Words of the training data missing from the LM
// vocabulary get random vectors, as AllenNLP does for any pretrained_file. Make the vectors with
//   allennlp ldnet-export-word-vectors $FORWARD_LM_ARCHIVE lm_word_vectors.txt --lowercase
// (lowercased, like the `tokens` indexer) and set LM_WORD_VECTORS=lm_word_vectors.txt.
local lm_embedding_dim = 128;

function(config)
  local words = config.model.text_field_embedder.token_embedders.tokens;
  config + {
    model+: {
      text_field_embedder+: {
        token_embedders+: {
          tokens: words + {
            embedding_dim: lm_embedding_dim,
            pretrained_file: std.extVar("LM_WORD_VECTORS"),
          },
        },
      },
      encoder+: {input_size: super.input_size - words.embedding_dim + lm_embedding_dim},
    },
  }
