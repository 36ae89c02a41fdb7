"""
LD-Net's proximal step on the layer masks of a model's dense biLMs (`LayerMaskProjection`), and
what a model's metrics report of them while they train (`ReportsLayerMasks`). The
`layer_pruning` trainer callback (`pruning/callback.py`) applies the one and turns on the other.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple

import torch

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS
from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms


class LayerMaskProjection:
    """
    The layer masks of every `DenseBiLm` in `model` (`find_dense_bilms`; each `(2,
    num_lm_layers)`, row 0 forward, row 1 backward), projected onto [0, 1] in place by `project`
    (LD-Net's proximal step, after every optimizer step). With `sticky_zeros`, a mask that was 0
    after the last projection (or, first, when the projection is made) is put back to 0 before
    the clamp: its layer is removed for good.

    # Parameters

    model : `torch.nn.Module`
        The model whose masks are projected.
    sticky_zeros : `bool`, optional (default = `False`)
        A mask that reaches 0 stays at 0.
    """

    def __init__(self, model: torch.nn.Module, sticky_zeros: bool = False) -> None:
        self.masks: List[Tuple[str, torch.nn.Parameter]] = [
            (name, bilm.layer_mask) for name, bilm in find_dense_bilms(model)
        ]
        self.sticky_zeros = sticky_zeros
        # per mask parameter, where it was 0 after the last projection
        self._dead = [mask.detach() == 0 for _, mask in self.masks]

    def project(self) -> None:
        """Clamps every mask onto [0, 1], in place (with `sticky_zeros`, dead ones first to 0)."""
        with torch.no_grad():
            for (_, mask), dead in zip(self.masks, self._dead):
                if self.sticky_zeros:
                    mask.masked_fill_(dead, 0.0)
                mask.clamp_(0.0, 1.0)
            self._dead = [mask.detach() == 0 for _, mask in self.masks]

    def projected_masks(self) -> List[Tuple[str, torch.Tensor]]:
        """
        The masks as the next projection leaves them (clamped; with `sticky_zeros`, dead ones
        at 0), without changing them: AllenNLP computes a batch's metrics after the optimizer
        step and before the callback's `on_batch` projects, so the metrics read these, not the
        raw parameters (an optimizer step may move a dead mask off 0 until the projection puts
        it back).
        """
        projected = []
        for (name, mask), dead in zip(self.masks, self._dead):
            value = mask.detach().clamp(0.0, 1.0)
            if self.sticky_zeros:
                value = value.masked_fill(dead, 0.0)
            projected.append((name, value))
        return projected

    def live_layers(self) -> int:
        """The number of masks > 0 once projected, every biLM and direction together."""
        return sum(int((mask > 0).sum()) for _, mask in self.projected_masks())

    def mask_metrics(self) -> Dict[str, float]:
        """`live_layers`, and each projected mask as `_layer_mask/<module>/<direction>_<i>`."""
        metrics: Dict[str, float] = {"live_layers": float(self.live_layers())}
        for name, mask in self.projected_masks():
            for row, direction in enumerate(DIRECTIONS):
                for layer, value in enumerate(mask[row].tolist()):
                    metrics[f"_layer_mask/{name}/{direction}_{layer}"] = value
        return metrics


class _Report(NamedTuple):
    projection: LayerMaskProjection
    gated_metric: str
    budget: Optional[int]


class ReportsLayerMasks:
    """
    A model whose metrics report its layer masks while they train (`ldnet_crf_tagger`).
    `report_layer_masks` turns the report on (the `layer_pruning` callback calls it when
    training starts); the model's `get_metrics` then adds `layer_mask_metrics(metrics)`.
    """

    _layer_mask_report: Optional[_Report] = None

    def report_layer_masks(
        self, projection: LayerMaskProjection, gated_metric: str, budget: Optional[int]
    ) -> None:
        """
        From now on, the model's metrics gain `live_layers` and one hidden
        `_layer_mask/<module>/<direction>_<i>` per mask, read through `projection`, and, with a
        `budget`, `<gated_metric>-within-budget`: the metric `gated_metric` where the number of
        live layers is within `budget`, -1 elsewhere (below any real value, so that any
        within-budget epoch beats every over-budget one).

        # Parameters

        projection : `LayerMaskProjection`
            The projection of this model's masks that training applies.
        gated_metric : `str`
            The metric gated by the budget.
        budget : `int`, optional
            The number of live layers allowed.
        """
        self._layer_mask_report = _Report(projection, gated_metric, budget)

    def layer_mask_metrics(self, metrics: Dict[str, float]) -> Dict[str, float]:
        """What `metrics`, the model's own, gain (`report_layer_masks`); nothing before it."""
        report = self._layer_mask_report
        if report is None:
            return {}
        extra = report.projection.mask_metrics()
        if report.budget is not None and report.gated_metric in metrics:
            within = report.projection.live_layers() <= report.budget
            extra[f"{report.gated_metric}-within-budget"] = (
                metrics[report.gated_metric] if within else -1.0
            )
        return extra
