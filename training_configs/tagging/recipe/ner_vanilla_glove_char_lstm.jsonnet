// Recipe search: ner_vanilla_glove with a character BiLSTM (30-d characters, 75 per
// direction = 150, LD-Net's sizes) in place of the char CNN (25-d, 50 filters); the word
// BiLSTM's input grows by 100. Dev F1 only: benchmarks/results/tagging.json, recipe_search.
local base = import '../ner_vanilla_glove.jsonnet';

base + {
  model+: {
    text_field_embedder+: {
      token_embedders+: {
        token_characters: {
          type: "character_encoding",
          embedding: {embedding_dim: 30, vocab_namespace: "token_characters"},
          encoder: {type: "lstm", input_size: 30, hidden_size: 75, bidirectional: true},
        },
      },
    },
    encoder+: {input_size: super.input_size - 50 + 150},
  },
}
