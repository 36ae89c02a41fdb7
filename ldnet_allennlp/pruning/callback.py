"""
LD-Net's pruning phase as an AllenNLP `TrainerCallback`.
"""

import json
import logging
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.models import Model
from allennlp.training.callbacks import TrainerCallback

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS
from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms
from ldnet_allennlp.pruning.penalty import LayerSelectionRegularizer, layer_selection_terms

logger = logging.getLogger(__name__)

# Under DDP: every worker's per-epoch masks and decisions, written by the primary.
WORKERS_FILE = "layer_pruning_workers.json"


def find_budget(model: Model) -> Optional[int]:
    """The `budget` of the model's `layer_selection` regularizer, if it has one."""
    applicator = getattr(model, "_regularizer", None)
    for _, regularizer in getattr(applicator, "_regularizers", []):
        if isinstance(regularizer, LayerSelectionRegularizer):
            return regularizer.budget
    return None


@TrainerCallback.register("layer_pruning")
class LayerPruningCallback(TrainerCallback):
    """
    Phase 2 of LD-Net: train the layer masks under the `layer_selection` penalty.

    - From epoch `start_epoch` on (default 0: the run starts pruning, e.g. from a phase-1 tagger
      loaded with `from_archive` or an initializer), the masks are trainable, and so the
      `layer_selection` regularizer (which AllenNLP applies only to trainable parameters) is on.
      Before it they are fixed. The embedder's mask must be created trainable
      (`"trainable_layer_mask": true`), so that the optimizer holds it. The embedder may be
      `layer_selection` or `dense_lm_scalar_mix`: the callback reads the masks of every
      `DenseBiLm` in the model, whichever embedder holds it.
    - After every optimiser step (training batches only; AllenNLP also calls `on_batch` for
      validation batches) the masks are projected onto [0, 1].
    - The model's metrics (through its `metric_extensions`: `ldnet_crf_tagger`) gain
      `live_layers`, one hidden `_layer_mask/<module>/<direction>_<i>`
      per mask, and, when the regularizer sets a budget, `<gated_metric>-within-budget`: the
      validation metric where the number of live layers is within budget, -1 elsewhere (below
      any real value, so any within-budget epoch beats every over-budget one). Use it as
      `trainer.validation_metric` (e.g. `"+f1-measure-overall-within-budget"`) so that only
      within-budget checkpoints count as best. Metrics go to the log, metrics.json and TensorBoard.
    - Its state (mask history, for the plot) is checkpointed, so `--recover` resumes exactly.
    - Writes `layer_masks.png` (every mask over training steps) into the serialization dir after
      every epoch.

    Under `"distributed"` training (DDP), `start_epoch` must be 0 (a `ConfigurationError`
    otherwise): DDP fixes the set of parameters whose gradients it averages when it wraps the
    model, before this callback runs. DDP averages the masks' gradients and the clamp is
    deterministic, so the masks, and with them the penalty's budget gate, `live_layers` and the
    within-budget metric, are the same on every worker; after every projection the workers'
    masks are compared (`all_gather`) and a `RuntimeError` stops training if they differ. After
    every epoch the primary writes every worker's masks and decisions (live layers, budget gate,
    within-budget metric, best-so-far) to `layer_pruning_workers.json`.

    With `sticky_zeros`, a mask that has reached 0 stays at 0: the projection after every step
    puts it back to 0 whatever the optimizer did (its layer is removed for good). The number of
    live layers can then only fall, so a run that reaches its budget ends within it. This is a
    deviation from LD-Net, whose masks may come back to life (with our optimisers they did, and
    runs ended over budget: benchmarks/results/pruning.json). The dead masks are the zeros of
    the masks themselves, so `--recover` needs no extra state.

    # Parameters

    serialization_dir : `str`
        The run's folder (given by the trainer).
    start_epoch : `int`, optional (default = `0`)
        The first epoch of the pruning phase.
    gated_metric : `str`, optional (default = `"f1-measure-overall"`)
        The validation metric by which the best model is chosen, within budget.
    record_every : `int`, optional (default = `10`)
        Batches between mask records.
    sticky_zeros : `bool`, optional (default = `false`)
        A mask that reaches 0 stays at 0.
    """

    def __init__(
        self,
        serialization_dir: str,
        start_epoch: int = 0,
        gated_metric: str = "f1-measure-overall",
        record_every: int = 10,
        sticky_zeros: bool = False,
    ) -> None:
        super().__init__(serialization_dir)
        if start_epoch < 0:
            raise ConfigurationError(f"layer_pruning: start_epoch must be >= 0, got {start_epoch}")
        if record_every < 1:
            raise ConfigurationError(
                f"layer_pruning: record_every must be >= 1, got {record_every}"
            )
        self.start_epoch = start_epoch
        self.gated_metric = gated_metric
        self.record_every = record_every
        self.sticky_zeros = sticky_zeros
        self.history: List[Dict[str, Any]] = []
        # this worker's masks and decisions after every epoch (`epoch_record`)
        self.epochs: List[Dict[str, Any]] = []
        self.steps = 0
        self._masks: List[Tuple[str, torch.nn.Parameter]] = []
        self._budget: Optional[int] = None
        # with `sticky_zeros`: per mask parameter, where it was 0 after the last projection
        self._dead: List[torch.Tensor] = []

    # -- trainer hooks -------------------------------------------------------------------------

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        model = trainer.model
        self._masks = [(name, bilm.layer_mask) for name, bilm in find_dense_bilms(model)]
        if not self._masks:
            raise ConfigurationError(
                "layer_pruning: the model has no layer-selection embedder (layer_selection or "
                "dense_lm_scalar_mix: no dense biLM with layer masks); there is nothing to prune."
            )
        for name, mask in self._masks:
            if not mask.requires_grad:
                raise ConfigurationError(
                    f"layer_pruning: the layer mask of {name or 'the model'} is fixed; set "
                    '"trainable_layer_mask": true on its embedder (layer_selection or '
                    "dense_lm_scalar_mix)."
                )
        if getattr(trainer, "_distributed", False) and trainer._epochs_completed < self.start_epoch:
            raise ConfigurationError(
                f'layer_pruning: start_epoch is {self.start_epoch}, but under "distributed" '
                "training the masks must train from the first epoch: DDP fixes the parameters "
                "whose gradients it averages when it wraps the model, so masks switched on "
                "later would not be synchronised. Set start_epoch to 0 (start from a phase-1 "
                "tagger instead)."
            )
        self._budget = find_budget(model)
        if self._budget is None:
            logger.warning(
                "layer_pruning: the model has no `layer_selection` regularizer on its layer "
                "masks, so nothing pushes them to 0 and no budget gates the best checkpoint."
            )
        # after `--recover` the trainer counts its epochs from 0 again while it skips those
        # before the checkpoint (without calling on_epoch): those count as completed here
        epochs_completed = max(
            trainer._epochs_completed, getattr(trainer, "_start_after_epochs_completed", 0)
        )
        self._set_active(epochs_completed >= self.start_epoch)
        self._dead = [mask.detach() == 0 for _, mask in self._masks]
        self._add_metrics_to(model)
        if not self.history:
            self._record(epoch=epochs_completed)

    def on_batch(
        self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
        is_training, is_primary=True, batch_grad_norm=None, **kwargs,
    ) -> None:  # fmt: skip
        if not is_training or not self.active:
            return
        self.project()
        self.check_workers_agree()
        self.steps += 1
        if self.steps % self.record_every == 0:
            self._record(epoch=epoch)

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        if epoch + 1 == self.start_epoch:
            self._set_active(True)
        self._record(epoch=epoch + 1)
        self.epochs.append(self.epoch_record(trainer, metrics, epoch))
        logger.info("layer_pruning after epoch %d: %s", epoch, self.describe())
        if is_distributed():
            self._write_workers_file(is_primary)
        if is_primary:
            self.plot()

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if is_primary and self.history:
            self.plot()
        # The trainer calls `on_end` from a `finally` block: an exception in flight means the
        # run stopped there, and its masks say nothing about the budget.
        error = sys.exc_info()[1]
        if error is not None:
            logger.error(
                "layer_pruning: training stopped by %s after %d epochs, with %s",
                type(error).__name__,
                len(self.epochs),
                self.describe(),
            )
            return
        if self._budget is not None and self.live_layers() > self._budget:
            logger.warning(
                "layer_pruning: training ended with %d live layers, over the budget of %d: "
                "train longer or raise lambda0.",
                self.live_layers(),
                self._budget,
            )

    def state_dict(self) -> Dict[str, Any]:
        return {"history": self.history, "steps": self.steps, "epochs": self.epochs}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.history = list(state_dict["history"])
        self.steps = int(state_dict["steps"])
        self.epochs = list(state_dict.get("epochs", []))

    # -- the work ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return bool(self._masks) and self._masks[0][1].requires_grad

    def _set_active(self, active: bool) -> None:
        for _, mask in self._masks:
            mask.requires_grad_(active)

    def project(self) -> None:
        """
        The proximal step of LD-Net: clamp every mask onto [0, 1], in place (with
        `sticky_zeros`, first put every mask that was 0 back to 0).
        """
        with torch.no_grad():
            for (_, mask), dead in zip(self._masks, self._dead):
                if self.sticky_zeros:
                    mask.masked_fill_(dead, 0.0)
                mask.clamp_(0.0, 1.0)
            self._dead = [mask.detach() == 0 for _, mask in self._masks]

    def projected_masks(self) -> List[Tuple[str, torch.Tensor]]:
        """
        The masks as the next projection leaves them (clamped; with `sticky_zeros`, dead ones
        at 0): AllenNLP computes a batch's metrics after the optimizer step and before
        `on_batch` projects, so the metrics read these, not the raw parameters (an optimizer
        step may move a dead mask off 0 until the projection puts it back).
        """
        projected = []
        for (name, mask), dead in zip(self._masks, self._dead):
            value = mask.detach().clamp(0.0, 1.0)
            if self.sticky_zeros:
                value = value.masked_fill(dead, 0.0)
            projected.append((name, value))
        return projected

    def live_layers(self) -> int:
        return sum(int((mask > 0).sum()) for _, mask in self.projected_masks())

    def budget_gate(self) -> Optional[List[bool]]:
        """
        Per mask parameter, the penalty's gate `[reg0_fwd + reg0_bwd > budget]` for the current
        masks (the one its next evaluation applies); None without a budget.
        """
        if self._budget is None:
            return None
        return [
            layer_selection_terms(mask).reg0 > self._budget for _, mask in self.projected_masks()
        ]

    def epoch_record(self, trainer, metrics: Dict[str, Any], epoch: int) -> Dict[str, Any]:
        """This worker's masks and pruning decisions after `epoch`."""
        tracker = getattr(trainer, "_metric_tracker", None)
        return {
            "epoch": epoch,
            "step": self.steps,
            "masks": {name: mask.detach().tolist() for name, mask in self._masks},
            "live_layers": self.live_layers(),
            "budget_gate": self.budget_gate(),
            "within_budget_metric": metrics.get(f"validation_{self.gated_metric}-within-budget"),
            "is_best_so_far": None if tracker is None else bool(tracker.is_best_so_far()),
        }

    def check_workers_agree(self) -> None:
        """
        Under DDP: gathers every worker's masks and raises a `RuntimeError` naming the first
        worker whose masks differ from worker 0's. Every worker raises, so none is left waiting.
        """
        if not is_distributed():
            return
        local = torch.cat([mask.detach().reshape(-1) for _, mask in self._masks])
        gathered = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, local)
        for rank, masks in enumerate(gathered):
            if not torch.equal(masks, gathered[0]):
                raise RuntimeError(
                    f"layer_pruning: after optimizer step {self.steps + 1} the layer masks of "
                    f"worker {rank} ({masks.tolist()}) differ from worker 0's "
                    f"({gathered[0].tolist()}); distributed workers must prune identically. "
                    "Are the masks trained by DDP (trainable from the start, start_epoch 0)?"
                )

    def _write_workers_file(self, is_primary: bool) -> None:
        gathered: List[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, {"rank": dist.get_rank(), "epochs": self.epochs})
        if is_primary:
            path = os.path.join(self.serialization_dir, WORKERS_FILE)
            with open(path, "w") as workers_file:
                json.dump(
                    {"world_size": len(gathered), "workers": gathered}, workers_file, indent=1
                )

    def describe(self) -> str:
        parts = []
        for name, mask in self.projected_masks():
            for row, direction in enumerate(DIRECTIONS):
                values = " ".join(f"{value:.2f}" for value in mask[row].tolist())
                parts.append(f"{name}.{direction}=[{values}]")
        return f"{self.live_layers()} live layers; " + "; ".join(parts)

    def mask_metrics(self) -> Dict[str, float]:
        metrics: Dict[str, float] = {"live_layers": float(self.live_layers())}
        for name, mask in self.projected_masks():
            for row, direction in enumerate(DIRECTIONS):
                for layer, value in enumerate(mask[row].tolist()):
                    metrics[f"_layer_mask/{name}/{direction}_{layer}"] = value
        return metrics

    def extra_metrics(self, metrics: Dict[str, float]) -> Dict[str, float]:
        """
        What the model's metrics gain (see the class docstring): the mask metrics, and the
        budget-gated metric computed from `metrics`, the model's own.
        """
        extra = self.mask_metrics()
        if self._budget is not None and self.gated_metric in metrics:
            within = self.live_layers() <= self._budget
            extra[f"{self.gated_metric}-within-budget"] = (
                metrics[self.gated_metric] if within else -1.0
            )
        return extra

    def _add_metrics_to(self, model: Model) -> None:
        """
        Adds `extra_metrics` to the model's `metric_extensions` (once, also on `--recover`),
        which `ldnet_crf_tagger` applies in its `get_metrics`.
        """
        extensions = getattr(model, "metric_extensions", None)
        if extensions is None:
            raise ConfigurationError(
                f"layer_pruning: the model ({type(model).__name__}) has no `metric_extensions`, "
                "so its metrics cannot report the layer masks and the within-budget metric. Use "
                'the "ldnet_crf_tagger" model (or give yours a `metric_extensions` list that its '
                "`get_metrics` applies)."
            )
        if self.extra_metrics not in extensions:
            extensions.append(self.extra_metrics)

    def _record(self, epoch: int) -> None:
        self.history.append(
            {
                "step": self.steps,
                "epoch": epoch,
                "masks": {name: mask.detach().tolist() for name, mask in self._masks},
            }
        )

    def plot(self) -> Optional[str]:
        """Writes `layer_masks.png`: every mask over the training steps, one panel a direction."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        steps = [record["step"] for record in self.history]
        figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for name, _ in self._masks:
            for row, direction in enumerate(DIRECTIONS):
                layers = len(self.history[0]["masks"][name][row])
                for layer in range(layers):
                    values = [record["masks"][name][row][layer] for record in self.history]
                    axes[row].plot(steps, values, label=f"layer {layer}")
                axes[row].set_title(f"{direction} LM {name}".strip())
                axes[row].set_xlabel("optimizer steps while pruning")
        axes[0].set_ylabel("layer mask z")
        axes[1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
        budget = f" (budget {self._budget})" if self._budget is not None else ""
        figure.suptitle(f"LD-Net layer masks: {self.live_layers()} live layers{budget}")
        figure.tight_layout()
        path = os.path.join(self.serialization_dir, "layer_masks.png")
        figure.savefig(path, dpi=100)
        plt.close(figure)
        return path
