// ner_ldnet.jsonnet with the word embeddings w_t initialised from the forward dense LM's input
// embeddings instead of at random: the nearest thing to GloVe on this machine (there is none), used
// to measure how much of the gap to the published F1 comes from having no pretrained word vectors
// (benchmarks/tagging_benchmark.py --runs ner_ldnet_lm_init; key conll03_test_f1_ldnet_lm_init).
//
// Everything else is ner_ldnet.jsonnet. w_t becomes 128-d (the LM's embedding dim), so the word
// BiLSTM reads 128 + 50 + 100 = 278 dims. Words of the training data missing from the LM
// vocabulary get random vectors, as AllenNLP does for any pretrained_file. Make the vectors with
//   allennlp ldnet-export-word-vectors $FORWARD_LM_ARCHIVE lm_word_vectors.txt --lowercase
// (lowercased, like the `tokens` indexer) and set LM_WORD_VECTORS=lm_word_vectors.txt.
local ner_ldnet = import 'ner_ldnet.jsonnet';

ner_ldnet + {
  model+: {
    text_field_embedder+: {
      token_embedders+: {
        tokens: {
          type: "embedding",
          embedding_dim: 128,
          pretrained_file: std.extVar("LM_WORD_VECTORS"),
          trainable: true,
        },
      },
    },
    encoder+: {input_size: 278},
  },
}
