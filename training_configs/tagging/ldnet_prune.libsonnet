// LD-Net phase 2, task-guided layer selection (Liu et al., EMNLP 2018, PAPERS.md §1 "Layer
// selection"), written once for every LD-Net tagger config: `prune(phase1, phase1_dir)` starts from
// a trained phase-1 tagger (its config and its serialization dir: vocabulary/ and best.th), makes
// the per-layer masks z of both LMs trainable, adds the official penalty
//   λ0·(reg3_fwd + reg3_bwd) + [reg0_fwd + reg0_bwd > budget]·λ0·(reg1_fwd + reg1_bwd)
// (budget = λ1 = 2 and λ0 = 0.05 per sentence, the official values), clamps z to [0, 1] after every
// optimizer step, and keeps as "best" only checkpoints within budget.
// λ0 is scaled by the batch size: the official CRFLoss averages the loss over the batch
// (average_batch=True), AllenNLP's CrfTagger returns the SUM over the batch, so the same balance
// between task loss and penalty needs λ0 = 0.05 · batch_size here.
//
// mask_optimizer: 'adam' (default) trains the masks with Adam at their own lr `mask_lr` (the
// tagger's own Adam, or, for a tagger trained with SGD, an Adam of their own); 'sgd' is the official recipe for the masks: SGD, momentum 0.9, lr 0.015 on the
// batch-averaged loss, i.e. 0.015 / batch_size on AllenNLP's summed loss (AllenNLP's `multi`
// optimizer: the tagger's own optimizer for everything else).
//
// sticky_zeros: true keeps a mask that has reached 0 at 0 (the `layer_pruning` callback's
// option): not in LD-Net, whose masks may come back to life. With it the live-layer count can
// only fall, so a run that reaches its budget ends within it.
//
// reg1_scale: the weight of the L1 term relative to λ0 (1 in LD-Net; the penalty's docstring,
// ldnet_allennlp/pruning/penalty.py, says why a mask at exactly 1 never leaves it with 1).
//
// tagger_lr: the initial learning rate of the tagger's own optimizer in phase 2 (default: phase
// 1's initial one); e.g. where phase 1's decayed schedule ended, so that phase 2 does not shake
// a converged tagger (recipe/ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet measures it).
//
// embedder: the key of the LM embedder in text_field_embedder.token_embedders ('lm' for the
// LD-Net taggers' layer_selection; 'elmo' for ../elmo/ner_scalar_mix_prune.jsonnet's
// dense_lm_scalar_mix, which has the same layer masks). Phase 1's own regularizers (the scalar
// mix's L2 on scalar_parameters) stay, the penalty is added to them.
{
  prune(phase1, phase1_dir, lambda0_per_sentence=0.05, budget=2, mask_lr=0.2, mask_optimizer='adam',
        sticky_zeros=false, reg1_scale=1.0, tagger_lr=null, embedder='lm')::
    assert mask_optimizer == 'adam' || mask_optimizer == 'sgd' : "mask_optimizer: 'adam' or 'sgd'";
    local tagger_optimizer = phase1.trainer.optimizer
                             + (if tagger_lr == null then {} else {lr: tagger_lr});
    phase1 + {
    // the phase-1 vocabulary, so that the phase-1 weights fit
    vocabulary: {type: 'from_files', directory: phase1_dir + '/vocabulary'},
    model+: {
      text_field_embedder+: {token_embedders+: {[embedder]+: {
        // z is a parameter the optimizer holds (the callback decides when it trains)
        trainable_layer_mask: true,
      }}},
      // the penalty, through AllenNLP's regularizer mechanism, on the (2, num_layers) mask
      regularizer: {regexes: std.get(std.get(phase1.model, 'regularizer', {}), 'regexes', [])
                             + [['layer_mask', {
        type: 'layer_selection',
        lambda0: lambda0_per_sentence * phase1.data_loader.batch_size,
        budget: budget,
      } + (if reg1_scale != 1.0 then {reg1_scale: reg1_scale} else {})]]},
      // start from the phase-1 weights
      initializer: {regexes: [['.*', {
        type: 'pretrained',
        weights_file_path: phase1_dir + '/best.th',
      }]]},
    },
    trainer+: {
      num_epochs: 10,
      // the masks get their own learning rate. Adam's step is lr · E[g]/sqrt(E[g²]): the
      // task gradient on a mask is noisy and much larger than the penalty's (on CoNLL-00 and
      // -03 the masks moved ~0.03 · lr per step at lr 0.01, far too slow for an epoch or two).
      // At 0.2, CoNLL-03's unneeded masks reached 0 within ~40 steps and stayed there; a noisier
      // task may need less (chunk_ldnet_prune uses 0.05). (LD-Net used plain SGD for many
      // epochs; we cannot afford that here.)
      optimizer: if mask_optimizer == 'adam' && phase1.trainer.optimizer.type == 'adam' then
        tagger_optimizer + {parameter_groups: [[['layer_mask'], {lr: mask_lr}]]}
      else if mask_optimizer == 'adam' then {
        // a tagger trained with SGD (recipe/): its SGD for everything else, Adam for the masks
        type: 'multi',
        optimizers: {default: tagger_optimizer, masks: {type: 'adam', lr: mask_lr}},
        parameter_groups: [[['layer_mask'], {optimizer_name: 'masks'}]],
      } else {
        type: 'multi',
        optimizers: {
          default: tagger_optimizer,
          masks: {type: 'sgd', lr: 0.015 / phase1.data_loader.batch_size, momentum: 0.9},
        },
        parameter_groups: [[['layer_mask'], {optimizer_name: 'masks'}]],
      },
      // the F1 that counts only when at most `budget` layers are alive (-1 otherwise)
      validation_metric: '+f1-measure-overall-within-budget',
      // no early stopping before the masks are within budget
      patience: 10,
      callbacks: phase1.trainer.callbacks + [
        // masks trainable from epoch 0, clamped after each step, logged, plotted
        // (layer_masks.png in the serialization dir)
        {type: 'layer_pruning', start_epoch: 0, sticky_zeros: sticky_zeros},
      ],
    },
  },
}
