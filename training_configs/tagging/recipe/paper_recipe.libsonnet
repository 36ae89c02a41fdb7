// LD-Net's training recipe (Liu et al., 2018; the official train_seq.py), for the recipe
// search: SGD with momentum 0.9, lr 0.015 decayed as lr / (1 + 0.05 · epoch)
// (`inverse_time_decay`), batch 10, gradient norm clipped at 5. The paper trains up to 200
// epochs with patience 15; `num_epochs` here is what the search could afford.
function(config, num_epochs=10)
  config + {
    data_loader+: {batch_size: 10},
    trainer+: {
      optimizer: {type: "sgd", lr: 0.015, momentum: 0.9},
      learning_rate_scheduler: {type: "inverse_time_decay", decay: 0.05},
      grad_norm: 5.0,
      num_epochs: num_epochs,
    },
  }
