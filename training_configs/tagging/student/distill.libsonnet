// A pruned student tagger distilled from a teacher's CRF marginals (LD-Net pruning x
// Tang et al.'s soft targets over a transfer set): `student(base, start_dir, ...)` is the tagger
// config `base` (e.g. recipe/ner_ldnet_glove_sgd.jsonnet) with
// - its LMs cut to `forward_kept_layers` / `backward_kept_layers` (those of the pruned tagger it
//   starts from),
// - the vocabulary and every weight of `start_dir` (a serialization directory: vocabulary/ and
//   best.th, e.g. the shipped ner_pruned unpacked by the `pruned_students` study),
// - the `ldnet_tagging_distillation` reader: the gold training file, then the transfer set's
//   sentences (`transfer_sentences` of them; null = all) with the teacher's marginals,
// - `ldnet_crf_tagger`'s loss: gold CRF NLL + `weight` x the distillation term `loss`
//   ('kl': KL from the teacher's marginals to the student's; 'silver': CRF NLL of the silver tags),
// - LD-Net's SGD recipe from `lr` (a fine-tuning rate: the start is a converged tagger) for
//   `num_epochs` epochs, the model picked on the base config's dev data.
function(base, start_dir, transfer_set, forward_kept_layers, backward_kept_layers, loss='kl',
         weight=1.0, transfer_sentences=null, num_epochs=3, lr=0.006)
  local gold_reader = base.dataset_reader;
  base + {
    dataset_reader: {
      type: 'ldnet_tagging_distillation',
      gold_reader: gold_reader,
      transfer_set: transfer_set,
      transfer_sentences: transfer_sentences,
    },
    validation_dataset_reader:
      if std.objectHas(base, 'validation_dataset_reader') then base.validation_dataset_reader
      else gold_reader,
    vocabulary: {type: 'from_files', directory: start_dir + '/vocabulary'},
    model+: {
      distillation_loss: loss,
      distillation_weight: weight,
      text_field_embedder+: {token_embedders+: {lm+: {
        forward_kept_layers: forward_kept_layers,
        backward_kept_layers: backward_kept_layers,
      }}},
      initializer: {regexes: [['.*', {type: 'pretrained', weights_file_path: start_dir + '/best.th'}]]},
    },
    trainer+: {
      num_epochs: num_epochs,
      optimizer+: {lr: lr},
    },
  }
