import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.nn import RegularizerApplicator

from ldnet_allennlp.pruning.penalty import (
    LayerSelectionRegularizer,
    layer_selection_penalty,
    layer_selection_terms,
)


def test_terms_by_hand():
    z = torch.tensor([[1.0, 0.5, 0.0], [0.25, 0.0, 1.0]])
    terms = layer_selection_terms(z)
    # reg3 = 0 + .25 + 0 + .1875 + 0 + 0
    assert terms.reg3.item() == pytest.approx(0.4375)
    assert terms.reg0 == 4
    assert terms.reg1.item() == pytest.approx(2.75)


def test_budget_gate_switches_the_l1_term():
    z = torch.tensor([[1.0, 0.5, 0.0], [0.25, 0.0, 1.0]], requires_grad=True)
    # 4 live layers > budget 2: λ0·reg3 + λ0·reg1
    over = layer_selection_penalty(z, lambda0=0.1, budget=2)
    assert over.item() == pytest.approx(0.1 * 0.4375 + 0.1 * 2.75)
    over.backward()
    # d/dz [λ0 z(1−z) + λ0 z·1(z>0)] = λ0 (1 − 2z) + λ0·1(z>0)
    expected = 0.1 * (1 - 2 * z.detach()) + 0.1 * (z.detach() > 0).float()
    assert torch.allclose(z.grad, expected)

    z.grad = None
    # 4 live layers <= budget 4: λ0·reg3 only
    within = layer_selection_penalty(z, lambda0=0.1, budget=4)
    assert within.item() == pytest.approx(0.1 * 0.4375)
    within.backward()
    assert torch.allclose(z.grad, 0.1 * (1 - 2 * z.detach()))


def test_regularizer_reaches_only_a_trainable_layer_mask():
    class Embedder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_mask = torch.nn.Parameter(torch.full((2, 3), 0.5))
            self.weight = torch.nn.Parameter(torch.ones(4))

    applicator = RegularizerApplicator.from_params(
        Params(
            {"regexes": [["layer_mask", {"type": "layer_selection", "lambda0": 1.0, "budget": 2}]]}
        )
    )
    module = Embedder()
    # six live masks of 0.5 > budget 2: reg3 = 6·0.25, reg1 = 3
    assert applicator(module).item() == pytest.approx(1.5 + 3.0)
    module.layer_mask.requires_grad_(False)  # masks fixed: pruning is off
    assert applicator(module) == 0.0


@pytest.mark.parametrize("lambda0, budget", [(-0.1, 2), (0.05, 0), (0.05, -1)])
def test_bad_config(lambda0, budget):
    with pytest.raises(ConfigurationError, match="lambda0|budget"):
        LayerSelectionRegularizer(lambda0=lambda0, budget=budget)


def test_reg1_scale_gives_a_mask_at_one_a_slope():
    z = torch.tensor([[1.0, 0.5, 0.0], [0.25, 0.0, 1.0]], requires_grad=True)
    # LD-Net's penalty: over budget, the slope at z = 1 is λ0 (1 − 2) + λ0 = 0
    layer_selection_penalty(z, lambda0=0.1, budget=2).backward()
    assert z.grad[0, 0].item() == pytest.approx(0.0)
    z.grad = None
    # reg1_scale 1.5: λ0·reg3 + 1.5·λ0·reg1, slope at z = 1 is 0.5·λ0
    scaled = layer_selection_penalty(z, lambda0=0.1, budget=2, reg1_scale=1.5)
    assert scaled.item() == pytest.approx(0.1 * 0.4375 + 1.5 * 0.1 * 2.75)
    scaled.backward()
    expected = 0.1 * (1 - 2 * z.detach()) + 1.5 * 0.1 * (z.detach() > 0).float()
    assert torch.allclose(z.grad, expected)
    assert z.grad[0, 0].item() == pytest.approx(0.05)
    assert z.grad[1, 2].item() == pytest.approx(0.05)
    # within budget the L1 term is off, whatever its scale
    within = layer_selection_penalty(z, lambda0=0.1, budget=4, reg1_scale=1.5)
    assert within.item() == pytest.approx(0.1 * 0.4375)


def test_reg1_scale_from_a_config():
    regularizer = LayerSelectionRegularizer.from_params(
        Params({"lambda0": 5.0, "budget": 2, "reg1_scale": 1.2})
    )
    z = torch.ones(2, 6)
    # 12 live masks at 1: reg3 = 0, reg1 = 12
    assert regularizer(z).item() == pytest.approx(1.2 * 5.0 * 12)
    with pytest.raises(ConfigurationError, match="reg1_scale"):
        LayerSelectionRegularizer(lambda0=0.05, budget=2, reg1_scale=-1.0)
