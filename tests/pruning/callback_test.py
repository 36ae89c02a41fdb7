from types import SimpleNamespace
from typing import Optional

import pytest
import torch
from PIL import Image

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.nn import RegularizerApplicator

from ldnet_allennlp.lm.modules import DenseBiLm
from ldnet_allennlp.lm.modules.mask_projection import ReportsLayerMasks
from ldnet_allennlp.pruning.callback import LayerPruningCallback
from ldnet_allennlp.pruning.penalty import LayerSelectionRegularizer


class MaskHolder(DenseBiLm):
    """A dense biLM with only its layer masks (no LMs): what the callback reads."""

    def __init__(self, trainable: bool = True) -> None:
        torch.nn.Module.__init__(self)
        self.layer_mask = torch.nn.Parameter(torch.ones(2, 3), requires_grad=trainable)


class ToyModel(Model, ReportsLayerMasks):
    """Layer masks under a `layer_selection` penalty (without one: `budget=None`)."""

    def __init__(self, trainable: bool = True, budget: Optional[int] = 2) -> None:
        penalty = [] if budget is None else [LayerSelectionRegularizer(lambda0=0.1, budget=budget)]
        regularizer = RegularizerApplicator([("layer_mask", p) for p in penalty])
        super().__init__(Vocabulary(), regularizer=regularizer)
        self.embedder = MaskHolder(trainable)

    def get_metrics(self, reset: bool = False):
        metrics = {"f1-measure-overall": 0.8}  # as `ldnet_crf_tagger`'s
        metrics.update(self.layer_mask_metrics(metrics))
        return metrics


class UnreportingModel(Model):
    def __init__(self) -> None:
        super().__init__(Vocabulary())
        self.embedder = MaskHolder()


def start(callback, model, epochs_completed=0):
    """`on_start`, after `epochs_completed` epochs (as `--recover` restores the callback)."""
    if epochs_completed:
        callback.load_state_dict({**callback.state_dict(), "epochs_completed": epochs_completed})
    trainer = SimpleNamespace(model=model)
    callback.on_start(trainer)
    return trainer


def batch(callback, trainer, is_training, epoch=0):
    callback.on_batch(trainer, [], [], {}, epoch, 1, is_training=is_training)


def test_projection_after_training_steps_only(tmp_path):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path))
    trainer = start(callback, model)
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[1.3, 0.5, -0.2], [0.1, -1.0, 2.0]]))
    batch(callback, trainer, is_training=False)  # a validation batch: untouched
    assert model.embedder.layer_mask[0, 0].item() == pytest.approx(1.3)
    batch(callback, trainer, is_training=True)
    expected = torch.tensor([[1.0, 0.5, 0.0], [0.1, 0.0, 1.0]])
    assert torch.allclose(model.embedder.layer_mask.detach(), expected)


@pytest.mark.parametrize("sticky", [False, True])
def test_sticky_zeros_keep_a_dead_mask_dead(tmp_path, sticky):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path), sticky_zeros=sticky)
    trainer = start(callback, model)
    mask = model.embedder.layer_mask
    with torch.no_grad():
        mask.copy_(torch.tensor([[1.0, 0.5, -0.3], [0.2, 1.0, 1.0]]))
    batch(callback, trainer, is_training=True)  # [0, 2] is clamped to 0: it dies
    with torch.no_grad():  # an optimizer step that would bring it back, and kill [1, 0]
        mask.add_(torch.tensor([[0.0, 0.0, 0.4], [-0.5, 0.0, 0.0]]))
    # AllenNLP reads a batch's metrics here, between the step and the projection: they count
    # the masks as the projection will leave them
    revived = 0.0 if sticky else 0.4
    metrics = model.get_metrics()
    assert metrics["live_layers"] == (4 if sticky else 5)
    assert metrics["_layer_mask/embedder/forward_2"] == pytest.approx(revived)
    batch(callback, trainer, is_training=True)
    expected = torch.tensor([[1.0, 0.5, revived], [0.0, 1.0, 1.0]])
    assert torch.allclose(mask.detach(), expected)
    assert model.get_metrics()["live_layers"] == (4 if sticky else 5)
    # `--recover`: a fresh callback takes the zeros of the restored masks as dead
    restored = LayerPruningCallback(str(tmp_path), sticky_zeros=sticky)
    trainer = start(restored, model, epochs_completed=1)
    with torch.no_grad():
        mask.add_(torch.tensor([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0]]))
    batch(restored, trainer, is_training=True)
    assert mask[1, 0].item() == pytest.approx(0.0 if sticky else 0.3)


def test_metrics_live_layers_and_budget_gate(tmp_path):
    model = ToyModel(budget=2)
    callback = LayerPruningCallback(str(tmp_path))
    start(callback, model)
    metrics = model.get_metrics()
    assert metrics["live_layers"] == 6
    assert metrics["f1-measure-overall-within-budget"] == -1.0  # 6 live layers > budget 2
    assert metrics["_layer_mask/embedder/backward_2"] == 1.0
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[0.0, 0.7, 0.0], [0.0, 0.0, 1.0]]))
    metrics = model.get_metrics()
    assert metrics["live_layers"] == 2
    assert metrics["f1-measure-overall-within-budget"] == 0.8
    # on_start again (as on --recover) reports the same metrics
    start(callback, model)
    assert model.get_metrics()["live_layers"] == 2
    assert model.get_metrics()["f1-measure-overall-within-budget"] == 0.8


def test_the_model_reports_nothing_before_pruning_starts():
    assert ToyModel().get_metrics() == {"f1-measure-overall": 0.8}


def test_a_model_that_does_not_report_its_masks_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="does not report its layer masks"):
        start(LayerPruningCallback(str(tmp_path)), UnreportingModel())


def test_the_budget_is_the_callbacks_own_key(tmp_path):
    # the callback's budget, the same as the penalty's
    model = ToyModel(budget=3)
    start(LayerPruningCallback(str(tmp_path), budget=3), model)
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[0.0, 0.7, 0.2], [0.0, 0.0, 1.0]]))
    assert model.get_metrics()["f1-measure-overall-within-budget"] == 0.8  # 3 live layers
    # without the key: the penalty's budget
    model = ToyModel(budget=2)
    start(LayerPruningCallback(str(tmp_path)), model)
    with torch.no_grad():
        model.embedder.layer_mask.copy_(torch.tensor([[0.0, 0.7, 0.2], [0.0, 0.0, 1.0]]))
    assert model.get_metrics()["f1-measure-overall-within-budget"] == -1.0
    # without a penalty: the key alone gates
    model = ToyModel(budget=None)
    callback = LayerPruningCallback(str(tmp_path), budget=4)
    start(callback, model)
    assert model.get_metrics()["f1-measure-overall-within-budget"] == -1.0  # 6 live layers
    assert callback.budget_gate() == [True]
    # neither: no within-budget metric
    model = ToyModel(budget=None)
    start(LayerPruningCallback(str(tmp_path)), model)
    assert "f1-measure-overall-within-budget" not in model.get_metrics()
    assert model.get_metrics()["live_layers"] == 6


def test_a_budget_other_than_the_penaltys_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="budget is 4, but .* regularizer is 2.*`budget`"):
        start(LayerPruningCallback(str(tmp_path), budget=4), ToyModel(budget=2))
    with pytest.raises(ConfigurationError, match="budget must be >= 1"):
        LayerPruningCallback(str(tmp_path), budget=0)


def test_start_epoch_switches_masks_and_penalty_on(tmp_path):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path), start_epoch=2)
    trainer = start(callback, model)
    assert not callback.active and model.get_regularization_penalty() == 0.0
    with torch.no_grad():
        model.embedder.layer_mask[0, 0] = 1.5
    batch(callback, trainer, is_training=True)
    assert model.embedder.layer_mask[0, 0].item() == 1.5  # not pruning yet: no projection
    callback.on_epoch(trainer, {}, epoch=0)
    assert not callback.active
    callback.on_epoch(trainer, {}, epoch=1)
    assert callback.active and model.get_regularization_penalty() > 0
    # recovering at epoch 2 starts active
    recovered = ToyModel()
    other = LayerPruningCallback(str(tmp_path), start_epoch=2)
    start(other, recovered, epochs_completed=2)
    assert other.active


def test_state_round_trip_and_plot(tmp_path):
    model = ToyModel()
    callback = LayerPruningCallback(str(tmp_path), record_every=1)
    trainer = start(callback, model)
    for step in range(3):
        with torch.no_grad():
            model.embedder.layer_mask[0, step] = 0.0
        batch(callback, trainer, is_training=True)
    callback.on_epoch(trainer, {}, epoch=0)
    state = callback.state_dict()
    assert [record["step"] for record in state["history"]] == [0, 1, 2, 3, 3]
    assert state["epochs_completed"] == 1
    without_count = {key: value for key, value in state.items() if key != "epochs_completed"}
    counted = LayerPruningCallback(str(tmp_path))
    counted.load_state_dict(without_count)  # the count: the epoch of the last mask record
    assert counted.epochs_completed == 1
    restored = LayerPruningCallback(str(tmp_path))
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    image = Image.open(tmp_path / "layer_masks.png")
    assert image.size[0] > 500 and image.size[1] > 200


def test_refuses_models_it_cannot_prune(tmp_path):
    with pytest.raises(ConfigurationError, match="no layer-selection embedder"):
        start(LayerPruningCallback(str(tmp_path)), Model(Vocabulary()))
    with pytest.raises(ConfigurationError, match="trainable_layer_mask"):
        start(LayerPruningCallback(str(tmp_path)), ToyModel(trainable=False))
    with pytest.raises(ConfigurationError, match="start_epoch"):
        LayerPruningCallback(str(tmp_path), start_epoch=-1)
