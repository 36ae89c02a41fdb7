"""
The pruning callback's DDP guards, without processes: `torch.distributed`'s collectives are
replaced by fakes that play a second worker. (`training_test.py` runs the real thing.)
"""

import json

import pytest
import torch

from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.pruning import callback as callback_module
from ldnet_allennlp.pruning.callback import WORKERS_FILE, LayerPruningCallback
from tests.pruning.callback_test import ToyModel, batch, start


class SecondWorker:
    """Fake `torch.distributed` for worker 0 of 2; worker 1 holds `other_masks`."""

    def __init__(self, other_masks=None, other_epochs=None):
        self.other_masks = other_masks
        self.other_epochs = other_epochs

    def get_world_size(self):
        return 2

    def get_rank(self):
        return 0

    gathers = 0

    def all_gather(self, gathered, local):
        self.gathers += 1
        gathered[0].copy_(local)
        gathered[1].copy_(local if self.other_masks is None else self.other_masks.reshape(-1))

    def all_gather_object(self, gathered, local):
        gathered[0] = local
        gathered[1] = {"rank": 1, "epochs": self.other_epochs or local["epochs"]}


@pytest.fixture
def two_workers(monkeypatch):
    def install(**kwargs):
        fake = SecondWorker(**kwargs)
        monkeypatch.setattr(callback_module, "is_distributed", lambda: True)
        monkeypatch.setattr(callback_module, "dist", fake)
        return fake

    return install


def ddp_start(callback, model, epochs_completed=0):
    """`start` under DDP, before `two_workers` is installed: `is_distributed` only is true."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(callback_module, "is_distributed", lambda: True)
        return start(callback, model, epochs_completed)


def test_workers_are_compared_after_the_projection(tmp_path, two_workers):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path))
    trainer = start(callback, model)
    # worker 1 already projected; ours is projected before the comparison: they agree
    two_workers(other_masks=torch.tensor([[1.0, 0.5, 0.0], [0.1, 0.0, 1.0]]))
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[1.3, 0.5, -0.2], [0.1, -1.0, 2.0]]))
    batch(callback, trainer, is_training=True)
    assert callback.steps == 1


def test_workers_that_disagree_stop_training(tmp_path, two_workers):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path))
    trainer = start(callback, model)
    two_workers(other_masks=torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.75]]))
    with pytest.raises(RuntimeError, match="masks of worker 1 .* differ from worker 0's"):
        batch(callback, trainer, is_training=True)


def test_validation_batches_gather_nothing(tmp_path, two_workers):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path))
    trainer = start(callback, model)
    # a gather on a validation batch would hang DDP (only training steps are in lockstep)
    workers = two_workers(other_masks=torch.zeros(2, 3))
    batch(callback, trainer, is_training=False)
    assert workers.gathers == 0 and callback.steps == 0
    with pytest.raises(RuntimeError, match="differ"):  # a training step gathers, and disagrees
        batch(callback, trainer, is_training=True)
    assert workers.gathers == 1


def test_start_epoch_after_the_first_is_refused_under_ddp(tmp_path):
    with pytest.raises(ConfigurationError, match="start_epoch is 2.*distributed"):
        ddp_start(LayerPruningCallback(str(tmp_path), start_epoch=2), ToyModel())
    # resuming (--recover) after the masks were switched on is fine
    callback = LayerPruningCallback(str(tmp_path), start_epoch=2)
    ddp_start(callback, ToyModel(), epochs_completed=2)
    assert callback.active


def test_every_workers_decisions_are_written_after_each_epoch(tmp_path, two_workers):
    model = ToyModel(budget=2)
    callback = LayerPruningCallback(str(tmp_path))
    trainer = ddp_start(callback, model)
    two_workers()
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[0.0, 0.7, 0.0], [0.0, 0.0, 1.0]]))
    # the trainer's metrics: this epoch is the best so far
    metrics = {"validation_f1-measure-overall-within-budget": 0.8, "best_epoch": 0}
    callback.on_epoch(trainer, metrics, epoch=0, is_primary=True)

    written = json.loads((tmp_path / WORKERS_FILE).read_text())
    assert written["world_size"] == 2
    assert [worker["rank"] for worker in written["workers"]] == [0, 1]
    (record,) = written["workers"][0]["epochs"]
    assert record == {
        "epoch": 0,
        "step": 0,
        "masks": {"embedder": [[0.0, 0.699999988079071, 0.0], [0.0, 0.0, 1.0]]},
        "live_layers": 2,
        "budget_gate": [False],  # 2 live layers, budget 2: the L1 term is off
        "within_budget_metric": 0.8,
        "is_best_so_far": True,
    }
    # the records are part of the callback's checkpointed state (--recover keeps them)
    restored = LayerPruningCallback(str(tmp_path))
    restored.load_state_dict(callback.state_dict())
    assert restored.epochs == [record]
    # an epoch that is not the best so far (the trainer's `best_epoch` stays 0)
    callback.on_epoch(trainer, metrics, epoch=1, is_primary=True)
    assert callback.epochs[-1]["is_best_so_far"] is False
