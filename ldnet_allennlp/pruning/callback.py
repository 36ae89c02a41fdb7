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
from ldnet_allennlp.lm.modules.mask_projection import LayerMaskProjection, ReportsLayerMasks
from ldnet_allennlp.pruning.penalty import layer_selection_budgets, layer_selection_terms

logger = logging.getLogger(__name__)

# Under DDP: every worker's per-epoch masks and decisions, written by the primary.
WORKERS_FILE = "layer_pruning_workers.json"


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
    - The model computes metrics of its masks (`ReportsLayerMasks.report_layer_masks`, which
      this callback calls at the start; `ldnet_crf_tagger` has it): `live_layers`, one hidden
      `_layer_mask/<module>/<direction>_<i>` per mask, and, with a `budget`,
      `<gated_metric>-within-budget`: the validation metric where the number of live layers is
      within budget, -1 elsewhere (below any real value, so any within-budget epoch beats every
      over-budget one). Use it as `trainer.validation_metric` (e.g.
      `"+f1-measure-overall-within-budget"`) so that only within-budget checkpoints count as
      best. Metrics go to the log, metrics.json and TensorBoard.
    - The `budget` is this callback's key. Without it, the callback takes the `budget` of the
      model's `layer_selection` regularizer (the penalty's); with it, that regularizer must have
      the same budget (a `ConfigurationError` otherwise): the penalty pushes the masks towards
      one number of live layers, the best checkpoint is chosen within the same one.
    - Its state (mask history, for the plot; the epochs completed, which decide whether the masks
      train) is checkpointed, so `--recover` resumes exactly.
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
    budget : `int`, optional (default = the `layer_selection` regularizer's)
        The number of live layers, both directions of every biLM together, within which a
        checkpoint counts (`<gated_metric>-within-budget`), >= 1. Without it and without a
        `layer_selection` regularizer, no budget gates the best checkpoint.
    """

    def __init__(
        self,
        serialization_dir: str,
        start_epoch: int = 0,
        gated_metric: str = "f1-measure-overall",
        record_every: int = 10,
        sticky_zeros: bool = False,
        budget: Optional[int] = None,
    ) -> None:
        super().__init__(serialization_dir)
        if start_epoch < 0:
            raise ConfigurationError(f"layer_pruning: start_epoch must be >= 0, got {start_epoch}")
        if record_every < 1:
            raise ConfigurationError(
                f"layer_pruning: record_every must be >= 1, got {record_every}"
            )
        if budget is not None and budget < 1:
            raise ConfigurationError(f"layer_pruning: budget must be >= 1, got {budget}")
        self.start_epoch = start_epoch
        self.gated_metric = gated_metric
        self.record_every = record_every
        self.sticky_zeros = sticky_zeros
        self.budget = budget
        self.history: List[Dict[str, Any]] = []
        # this worker's masks and decisions after every epoch (`epoch_record`)
        self.epochs: List[Dict[str, Any]] = []
        self.steps = 0
        # epochs with an `on_epoch` call, also those before a `--recover` (checkpointed)
        self.epochs_completed = 0
        self.projection: Optional[LayerMaskProjection] = None
        self._masks: List[Tuple[str, torch.nn.Parameter]] = []
        self._budget: Optional[int] = None

    # -- trainer hooks -------------------------------------------------------------------------

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        model = trainer.model
        self.projection = LayerMaskProjection(model, sticky_zeros=self.sticky_zeros)
        self._masks = self.projection.masks
        self._check_masks(model)
        if is_distributed() and self.epochs_completed < self.start_epoch:
            raise ConfigurationError(
                f'layer_pruning: start_epoch is {self.start_epoch}, but under "distributed" '
                "training the masks must train from the first epoch: DDP fixes the parameters "
                "whose gradients it averages when it wraps the model, so masks switched on "
                "later would not be synchronised. Set start_epoch to 0 (start from a phase-1 "
                "tagger instead)."
            )
        self._budget = self._checked_budget(model)
        self._set_active(self.epochs_completed >= self.start_epoch)
        model.report_layer_masks(self.projection, self.gated_metric, self._budget)
        if not self.history:
            self._record(epoch=self.epochs_completed)

    def on_batch(
        self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
        is_training, is_primary=True, batch_grad_norm=None, **kwargs,
    ) -> None:  # fmt: skip
        if not is_training or not self.active:
            return
        self.projection.project()
        self.check_workers_agree()
        self.steps += 1
        if self.steps % self.record_every == 0:
            self._record(epoch=epoch)

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        self.epochs_completed = epoch + 1
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
        return {
            "history": self.history,
            "steps": self.steps,
            "epochs": self.epochs,
            "epochs_completed": self.epochs_completed,
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.history = list(state_dict["history"])
        self.steps = int(state_dict["steps"])
        self.epochs = list(state_dict.get("epochs", []))
        # a state without the count: the epoch of its last mask record, which is the count
        last_epoch = self.history[-1]["epoch"] if self.history else 0
        self.epochs_completed = int(state_dict.get("epochs_completed", last_epoch))

    # -- the work ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return bool(self._masks) and self._masks[0][1].requires_grad

    def _set_active(self, active: bool) -> None:
        for _, mask in self._masks:
            mask.requires_grad_(active)

    def projected_masks(self) -> List[Tuple[str, torch.Tensor]]:
        """The masks as the next projection leaves them (`LayerMaskProjection`)."""
        return self.projection.projected_masks() if self.projection is not None else []

    def live_layers(self) -> int:
        return self.projection.live_layers() if self.projection is not None else 0

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
        """
        This worker's masks and pruning decisions after `epoch`; `metrics` are those the trainer
        gives `on_epoch` (its `best_epoch` is `epoch` when this epoch is the best so far).
        """
        return {
            "epoch": epoch,
            "step": self.steps,
            "masks": {name: mask.detach().tolist() for name, mask in self._masks},
            "live_layers": self.live_layers(),
            "budget_gate": self.budget_gate(),
            "within_budget_metric": metrics.get(f"validation_{self.gated_metric}-within-budget"),
            "is_best_so_far": metrics.get("best_epoch") == epoch,
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

    def _check_masks(self, model: Model) -> None:
        """The model has layer masks, trainable ones, and reports them in its metrics."""
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
        if not isinstance(model, ReportsLayerMasks):
            raise ConfigurationError(
                f"layer_pruning: the model ({type(model).__name__}) does not report its layer "
                "masks in its metrics, so neither the masks nor the within-budget metric can be "
                'logged. Use the "ldnet_crf_tagger" model (or give yours `ReportsLayerMasks`, '
                "whose `layer_mask_metrics` its `get_metrics` adds)."
            )

    def _checked_budget(self, model: Model) -> Optional[int]:
        """
        The budget: this callback's `budget`, which the model's `layer_selection` regularizers
        must share, else theirs (`None` without either).
        """
        penalty_budgets = layer_selection_budgets(model)
        other = [b for b in penalty_budgets if self.budget is not None and b != self.budget]
        if other:
            raise ConfigurationError(
                f"layer_pruning: its budget is {self.budget}, but the budget of the model's "
                f"layer_selection regularizer is {other[0]}: the penalty would push the "
                "masks towards one number of live layers and the best checkpoint be chosen "
                "within another. Give the layer_pruning callback's `budget` and the "
                "layer_selection regularizer's `budget` the same value (or leave out the "
                "callback's)."
            )
        if not penalty_budgets:
            logger.warning(
                "layer_pruning: the model has no `layer_selection` regularizer on its layer "
                "masks, so nothing pushes them to 0%s.",
                "" if self.budget is not None else " and no budget gates the best checkpoint",
            )
        if self.budget is not None:
            return self.budget
        return penalty_budgets[0] if penalty_budgets else None

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
