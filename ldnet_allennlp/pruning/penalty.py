"""
LD-Net's task-guided layer-selection penalty (Liu et al., 2018), exactly as the official code has
it. For the per-layer masks `z` of the forward and the backward LM:

    reg3 = Σ z (1 − z)        pushes every mask to 0 or 1
    reg0 = #{i : z_i > 0}     layers still alive (not differentiable: only a gate)
    reg1 = Σ_{z_i > 0} z_i    L1 on the live masks

    penalty = λ0 · (reg3_fwd + reg3_bwd)
              + [reg0_fwd + reg0_bwd > budget] · reg1_scale · λ0 · (reg1_fwd + reg1_bwd)

`budget` (the official λ1) is the number of layers, both directions together, allowed to survive.
`reg1_scale` is 1 in LD-Net. Then a mask at exactly 1 feels no penalty over budget
(d/dz = λ0 (1 − 2z) + λ0 = 0 at z = 1), so a mask that the task gradient holds at 1 never
leaves it; `reg1_scale > 1` makes that slope `(reg1_scale − 1) · λ0 > 0` (a deviation from
LD-Net: a config that uses it says so and why). This is the only place the formula is written.
"""

from typing import List, NamedTuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp.nn.regularizers import Regularizer


class LayerSelectionTerms(NamedTuple):
    reg3: torch.Tensor
    reg0: int
    reg1: torch.Tensor


def layer_selection_terms(layer_mask: torch.Tensor) -> LayerSelectionTerms:
    """
    `layer_mask`: the masks of both directions, any shape (e.g. `(2, num_layers)`); the terms are
    sums over all of them, i.e. `reg_fwd + reg_bwd`.
    """
    alive = layer_mask > 0
    reg3 = (layer_mask * (1 - layer_mask)).sum()
    reg1 = (layer_mask * alive).sum()
    return LayerSelectionTerms(reg3=reg3, reg0=int(alive.sum().item()), reg1=reg1)


def layer_selection_penalty(
    layer_mask: torch.Tensor, lambda0: float, budget: int, reg1_scale: float = 1.0
) -> torch.Tensor:
    terms = layer_selection_terms(layer_mask)
    penalty = lambda0 * terms.reg3
    if terms.reg0 > budget:
        penalty = penalty + reg1_scale * lambda0 * terms.reg1
    return penalty


def check_penalty_config(lambda0: float, budget: int, reg1_scale: float = 1.0) -> None:
    if lambda0 < 0:
        raise ConfigurationError(f"layer_selection: lambda0 must be >= 0, got {lambda0}")
    if reg1_scale < 0:
        raise ConfigurationError(f"layer_selection: reg1_scale must be >= 0, got {reg1_scale}")
    if budget < 1:
        raise ConfigurationError(
            f"layer_selection: budget must be >= 1, got {budget}. The budget counts the layers "
            "that survive in both directions together; a budget of 0 asks the penalty to remove "
            "every LM layer, which would leave the tagger only the LMs' token embeddings: train "
            "a tagger without LM features (e.g. ner_vanilla) instead. (With a budget of 1, or "
            "whenever the penalty removes all of one LM's layers, that LM contributes its token "
            "embeddings only; `allennlp ldnet-prune` keeps it so.)"
        )


@Regularizer.register("layer_selection")
class LayerSelectionRegularizer(Regularizer):
    """
    LD-Net's penalty as an AllenNLP `Regularizer`, applied to the dense biLM's `layer_mask`
    parameter (shape `(2, num_layers)`: forward row, backward row; under a `layer_selection` or a
    `dense_lm_scalar_mix` embedder alike) through the model's regularizer config:

        "regularizer": {"regexes": [["layer_mask", {"type": "layer_selection",
                                                     "lambda0": 0.05, "budget": 2}]]}

    AllenNLP only regularizes parameters that require gradients, so the penalty is on exactly
    while the masks are being trained (the pruning callback decides when).

    # Parameters

    lambda0 : `float`, optional (default = `0.05`, LD-Net's)
        The penalty's weight, >= 0.
    budget : `int`, optional (default = `2`, LD-Net's)
        The number of LM layers to keep, >= 1.
    reg1_scale : `float`, optional (default = `1.0`, LD-Net's)
        The weight of the L1 term relative to λ0, >= 0.
    """

    def __init__(self, lambda0: float = 0.05, budget: int = 2, reg1_scale: float = 1.0) -> None:
        check_penalty_config(lambda0, budget, reg1_scale)
        self.lambda0 = lambda0
        self.budget = budget
        self.reg1_scale = reg1_scale

    def __call__(self, parameter: torch.Tensor) -> torch.Tensor:
        return layer_selection_penalty(parameter, self.lambda0, self.budget, self.reg1_scale)


def layer_selection_budgets(model: Model) -> List[int]:
    """
    The `budget` of each `layer_selection` regularizer of `model`, in its config's order (the
    `layer_pruning` callback checks its own `budget` against them, or takes the first).

    AllenNLP 2.10.1 gives no public access to a model's regularizers: they are the private
    `Model._regularizer`, a `RegularizerApplicator` whose `(regex, regularizer)` pairs are its
    private `_regularizers`. This is the one place that reads them.
    """
    applicator = getattr(model, "_regularizer", None)
    return [
        regularizer.budget
        for _, regularizer in getattr(applicator, "_regularizers", [])
        if isinstance(regularizer, LayerSelectionRegularizer)
    ]
