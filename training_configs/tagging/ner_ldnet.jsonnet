// CoNLL-2003 NER with LD-Net contextual features (Liu et al., EMNLP 2018, PAPERS.md §1):
// v_t = [c_t; r_t; w_t] -> word BiLSTM -> CRF, with r_t = ReLU(W_cr · dropout([h_t; h^r_t]) + b_cr)
// from our frozen forward and backward dense LMs (`layer_selection` embedder).
// Published (official LD-Net, GloVe 100d, 10x300 LMs on One Billion Word): 91.86 ± 0.15 F1 unpruned;
// no-LM baseline 90.78. What this config reaches: benchmarks/results/tagging.json (key
// conll03_test_f1_ldnet; the header of the README/BENCHMARKS table says which LMs and epochs).
//
// Differences from the paper: the shipped LMs (pretrained/lm_{forward,backward}) are 6 x 128 dense
// layers pre-trained for 30 passes over a 5.9M-token corpus (benchmarks/results/lm.json), not
// 10 x 300 on 1B words; word embeddings w_t are trained from scratch (this config has no GloVe;
// ner_ldnet_glove.jsonnet adds it) over the lowercased training words; the character
// features c_t are the same char CNN as ner_vanilla.jsonnet (so the only difference to the
// baseline is r_t); Adam instead of SGD. Everything else is the baseline's budget (same epochs,
// batch size, BiLSTM 150 per direction, BIOUL = IOBES with constrained Viterbi decoding).
//
// Data: the original 4-column CoNLL-2003 files (IOB1, converted to BIOUL). LMs: two
// dense_language_model archives (training_configs/lm/dense_lm_{forward,backward}.jsonnet). Set
//   CONLL03_TRAIN_DATA_PATH=../shared/data/conll2003/eng.train
//   CONLL03_DEV_DATA_PATH=../shared/data/conll2003/eng.testa
//   FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz BACKWARD_LM_ARCHIVE=runs/lm_backward/model.tar.gz
// Train: allennlp train training_configs/tagging/ner_ldnet.jsonnet -s runs/ner_ldnet --include-package ldnet_allennlp
// Test:  allennlp evaluate runs/ner_ldnet/model.tar.gz ../shared/data/conll2003/eng.testb --include-package ldnet_allennlp
// The trained archive holds the LMs' weights, vocabulary and configs: it loads without the LM archives.
{
  "dataset_reader": {
    // AllenNLP's conll2003 reader with every line checked (error names file and line)
    "type": "ldnet_conll2003",
    "tag_label": "ner",
    "convert_to_coding_scheme": "BIOUL",
    "token_indexers": {
      "tokens": {"type": "single_id", "lowercase_tokens": true},
      "token_characters": {"type": "characters", "min_padding_length": 3},
      // ids in the LMs' own (cased) word vocabulary (read from the LM archive, or from the
      // vocabulary of a reloaded tagger archive); unknown words -> the LM's OOV id
      "lm": {"type": "dense_lm_tokens", "lm_archive": std.extVar("FORWARD_LM_ARCHIVE")},
    },
  },
  "train_data_path": std.extVar("CONLL03_TRAIN_DATA_PATH"),
  "validation_data_path": std.extVar("CONLL03_DEV_DATA_PATH"),
  // model selection on dev (eng.testa); `allennlp evaluate` on eng.testb gives the test F1
  "model": {
    "type": "ldnet_crf_tagger",
    "label_encoding": "BIOUL",
    "constrain_crf_decoding": true,
    "calculate_span_f1": true,
    "dropout": 0.5,
    "include_start_end_transitions": false,
    "text_field_embedder": {
      "token_embedders": {
        // w_t: word embeddings trained from scratch (no GloVe here)
        "tokens": {"type": "embedding", "embedding_dim": 100, "trainable": true},
        // c_t: char CNN, 25-d chars, 50 filters of width 3 (as in ner_vanilla)
        "token_characters": {
          "type": "character_encoding",
          "embedding": {"embedding_dim": 25, "vocab_namespace": "token_characters"},
          "encoder": {"type": "cnn", "embedding_dim": 25, "num_filters": 50, "ngram_filter_sizes": [3], "conv_layer_activation": "relu"},
        },
        // r_t: LD-Net features of the frozen LMs, [h_t; h^r_t] -> 100 (LD-Net: 6600 -> 100)
        "lm": {
          "type": "layer_selection",
          "forward_lm_archive": std.extVar("FORWARD_LM_ARCHIVE"),
          "backward_lm_archive": std.extVar("BACKWARD_LM_ARCHIVE"),
          "projection_dim": 100,
          "dropout": 0.5,
          // layer masks fixed at 1 here; the pruning configs make them trainable
          "trainable_layer_mask": false,
        },
      },
    },
    // word-level BiLSTM, 150 per direction as in LD-Net; input = 100 (w) + 50 (c) + 100 (r)
    "encoder": {"type": "lstm", "input_size": 250, "hidden_size": 150, "num_layers": 1, "bidirectional": true},
  },
  "data_loader": {"batch_size": 32, "shuffle": true},
  "trainer": {
    "optimizer": {"type": "adam", "lr": 0.001},
    "grad_norm": 5.0,
    "num_epochs": 20,
    "patience": 5,
    "validation_metric": "+f1-measure-overall",
    "callbacks": ["tensorboard", {"type": "console_logger", "should_log_inputs": false}],
  },
}
