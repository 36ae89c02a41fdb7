// Backward densely connected LSTM language model (LD-Net, Liu et al. EMNLP 2018, §1 of PAPERS.md).
//
// Sized for cheap CPU training and inference, not for the paper: 6 dense layers x 128 hidden over 128-d word
// embeddings (dense output 128 + 6 * 128 = 896 dims), projection 896 -> 256, adaptive softmax
// over a 40k vocabulary. The official LM is 10 x 300 over 300-d embeddings (~23M multiply-adds
// per token per direction); this one is ~3.6M, and keeps 6 layers so pruning has a choice.
// The size, chosen by tagging dev F1 per CPU-hour (python -m benchmarks lm_passes, tagging.json
// lm_passes; the NER recipe, mean dev F1 over epochs 5-8 of 8): at about 1 CPU-hour of
// pre-training, 6 x 128 for 1 pass (1.00 CPU-h, dev perplexity 168) gave 91.79 and 6 x 64 for
// 2 passes (1.09 CPU-h, 1.7x the tokens/s, perplexity 147) 91.66, a difference inside the spread
// between two seeds of one config (0.15); untrained 6 x 128 LMs gave 91.65 and the shipped 30-pass
// 6 x 128 LMs 92.26 / 92.41. Passes, not size, move dev F1 in this range, so the size stays
// 6 x 128: it is what the shipped 30-pass LMs have, and pruning has more to remove from it.
// Corpus: scripts/prepare_lm_corpus.py (Reuters-21578, BBC, ABC, Brown, State of the Union:
// ~5.9M tokens); WikiText-2 valid is scored separately (python -m benchmarks lm --stage pretrained).
//
//   LM_TRAIN_DATA_PATH=runs/lm_data/train.txt LM_VALIDATION_DATA_PATH=runs/lm_data/dev.txt \
//   allennlp train training_configs/lm/dense_lm_backward.jsonnet -s runs/lm_backward \
//     --include-package ldnet_allennlp
//
// Same as dense_lm_forward.jsonnet except for the direction: each sentence is read right to
// left and position t predicts token t - 1.
local direction = "backward";
local embedding_dim = 128;

{
  // One tokenized sentence per line, wrapped in <S> ... </S>; longer sentences are dropped.
  dataset_reader: { type: "dense_lm_text", max_sequence_length: 100 },
  train_data_path: std.extVar("LM_TRAIN_DATA_PATH"),
  validation_data_path: std.extVar("LM_VALIDATION_DATA_PATH"),
  // Word vocabulary, most frequent first (the adaptive softmax relies on that order).
  // 40k keeps every word seen >= 4 times in the 5.9M-token corpus; the rest is @@UNKNOWN@@.
  vocabulary: { max_vocab_size: { tokens: 40000 }, min_count: { tokens: 3 } },
  model: {
    type: "dense_language_model",
    direction: direction,
    // 128-d word embeddings, trained from scratch (no pre-trained vectors are available here).
    text_field_embedder: {
      token_embedders: { tokens: { type: "embedding", embedding_dim: embedding_dim } },
    },
    encoder: {
      input_size: embedding_dim,  // must equal the embedding dim
      hidden_size: 128,  // dims each dense layer adds
      num_layers: 6,  // >= 6 so that layer selection has something to choose from
      dropout: 0.01,  // LD-Net's official value, on each layer's input
      layer_dropout: 0.5,  // LD-Net layer-wise dropout: each layer dropped on the later-layer path
    },
    projection_dim: 256,  // ReLU(W_proj h + b): 896 -> 256
    // Adaptive softmax: 2k most frequent words in the head, then 8k and 30k in two tails
    // (tail dims 256/4 = 64 and 256/16 = 16).
    cutoffs: [2000, 10000],
    div_value: 4.0,
    dropout: 0.1,  // on embeddings and on the projection
  },
  data_loader: {
    // Sentences of similar length together: little padding, ~64 sentences (~1.4k tokens) a batch.
    batch_sampler: { type: "bucket", batch_size: 64, sorting_keys: ["source"] },
    // Read lazily, bucketing within chunks of 12.8k sentences (train.txt is already shuffled).
    max_instances_in_memory: 12800,
    // An "epoch" is 250 batches (~360k tokens, a few minutes): validation, a checkpoint and a
    // chance to stop/--recover every few minutes; the loader continues where it stopped.
    batches_per_epoch: 250,
  },
  validation_data_loader: {
    batch_sampler: { type: "bucket", batch_size: 128, sorting_keys: ["source"] },
  },
  trainer: {
    // 16 x 250 batches ~ 5.7M tokens ~ one pass over the corpus.
    // python -m benchmarks lm --stage pretrain lowers this (--epochs) to fit its budget.
    num_epochs: 16,
    optimizer: { type: "adam", lr: 0.002 },
    grad_norm: 5.0,
    validation_metric: "-perplexity",
    checkpointer: { save_completed_epochs: true },
    // stop when dev perplexity has not improved for 4 "epochs" of 250 batches
    patience: 4,
    // AllenNLP's default console logger would print the first batch's tensors
    callbacks: [{ type: "console_logger", should_log_inputs: false }],
  },
}
