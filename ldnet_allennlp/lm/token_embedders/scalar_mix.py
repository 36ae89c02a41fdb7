"""
ELMo-style scalar-mix token embedder (Peters et al., 2018; PAPERS.md §2) over our frozen dense
forward/backward LMs: a drop-in replacement for AllenNLP's `elmo_token_embedder`, prunable like
LD-Net's `layer_selection` (the same layer masks and kept layers, the biLM's).
"""

import logging
import warnings
from typing import Dict, List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.elmo import Elmo
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder
from allennlp.nn import util

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS
from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm, LayerMaskedEmbedder
from ldnet_allennlp.lm.modules.lm_archives import LM_NAMESPACE

logger = logging.getLogger(__name__)


def masked_mix_weights(scalar_parameters: torch.Tensor, mix_masks: torch.Tensor) -> torch.Tensor:
    """
    The scalar mix's softmax weights under layer masks, per direction:

        w_dj = z_dj · softmax(s)_j / Σ_k z_dk · softmax(s)_k

    With binary masks this is the softmax over the layers whose mask is 1 only: a removed
    layer's weight is 0 and the others are renormalised over the layers that remain. A soft
    mask `0 < z < 1` (while the pruning phase trains the masks) scales its layer's weight by `z`
    before the renormalisation, continuously down to 0 (see `LayerMaskedScalarMix`).

    # Parameters

    scalar_parameters : `torch.Tensor`, `(num_layers,)`
        The mix's `s`.
    mix_masks : `torch.Tensor`, `(2, num_layers)`
        `DenseBiLm.mix_masks()`: 1 for the token layer, `z` for each kept layer, 0 for a
        removed one.

    # Returns

    `(2, num_layers)`: row 0 the forward halves' weights, row 1 the backward halves'; each row
    sums to 1.
    """
    weights = torch.softmax(scalar_parameters, dim=0) * mix_masks
    return weights / weights.sum(dim=1, keepdim=True)


class LayerMaskedScalarMix(ScalarMix):
    """
    AllenNLP's `ScalarMix` over a `DenseBiLm`'s activations under the biLM's layer masks:

        ELMo = γ · [Σ_j w_fj · h_j_fwd ; Σ_j w_bj · h_j_bwd]        w = masked_mix_weights(s, z)

    over the `L + 1` layers of the loaded LMs, where `h_j` is what the biLM gives: the LM's layer
    output already multiplied by its mask `z_j` (zeros for a layer pruned away). Each direction
    has its own weights, because each LM has its own masks; with every mask 1 both rows are
    `softmax(s)` and this is `ScalarMix`. The parameters (`scalar_parameters.J`, `gamma`) are
    `ScalarMix`'s, one `s_j` per layer of the loaded LMs whatever is pruned, so a pruned model
    keeps the unpruned one's keys and shapes (the `s_j` of a removed layer is kept, unused).

    Masks and the renormalisation:

    - binary masks (a trained-and-clamped mask, or a pruned archive): a layer with mask 0 gets
      weight 0 and the others share the softmax, renormalised over the layers that remain, so
      the pruned archive (without those layers) computes exactly what the masked model did;
    - a soft mask `0 < z_j < 1` during the pruning phase: layer `j` enters the softmax with
      weight `z_j · exp(s_j)` (normalised with the other layers' `z_k · exp(s_k)`; the token
      layer's `z` is 1), and its output enters as `z_j · h_j`, as it enters later LM layers, so
      its contribution shrinks as `z_j²` and the other layers' weights grow continuously: the
      mix has no jump when a mask reaches 0, and the task loss sees the renormalisation while
      the masks train. Surviving soft masks stay as fixed multipliers in the pruned archive
      (`ldnet-prune`), so it still predicts what the masked model did.

    Without masking (every mask exactly 1 and not trainable: every model trained without
    pruning) `ScalarMix.forward` itself runs, so such a model computes exactly what AllenNLP's
    `ScalarMix` computes.

    # Parameters

    bilm : `DenseBiLm`
        The biLM whose activations are mixed; held by reference (not a submodule: its owner,
        `Elmo`, holds it).
    do_layer_norm, initial_scalar_parameters, trainable :
        As `ScalarMix`'s (`mixture_size` is `bilm.num_layers`).
    """

    def __init__(
        self,
        bilm: DenseBiLm,
        do_layer_norm: bool = False,
        initial_scalar_parameters: Optional[List[float]] = None,
        trainable: bool = True,
    ) -> None:
        super().__init__(
            bilm.num_layers,
            do_layer_norm=do_layer_norm,
            initial_scalar_parameters=initial_scalar_parameters,
            trainable=trainable,
        )
        # a bound method, not the module: the biLM stays Elmo's submodule only
        self._mix_masks = bilm.mix_masks
        widths = bilm.layer_widths()
        self._widths = [widths[d] for d in DIRECTIONS]
        # the layers some direction keeps (the others are zeros of weight 0: not computed)
        kept = set(bilm.kept_layers["forward"]) | set(bilm.kept_layers["backward"])
        self._mixed = [0] + [layer + 1 for layer in sorted(kept)]

    def layer_weights(self) -> torch.Tensor:
        """`masked_mix_weights(s, z)`, `(2, num_layers)` (row 0 forward, row 1 backward)."""
        return masked_mix_weights(
            torch.cat([parameter for parameter in self.scalar_parameters]), self._mix_masks()
        )

    def forward(  # type: ignore
        self, tensors: List[torch.Tensor], mask: Optional[torch.BoolTensor] = None
    ) -> torch.Tensor:
        """
        # Parameters

        tensors : `List[torch.Tensor]`, `num_layers` of `(batch_size, num_tokens, 2 * D)`
            The biLM's `activations` (forward half, then backward half).
        mask : `torch.BoolTensor`, `(batch_size, num_tokens)`
            Needed with `do_layer_norm`.

        # Returns

        The mix, `(batch_size, num_tokens, 2 * D)`.
        """
        if len(tensors) != self.mixture_size:
            raise ConfigurationError(
                f"{len(tensors)} tensors were passed, but the module was initialized to mix "
                f"{self.mixture_size} tensors."
            )
        masks = self._mix_masks()
        if not masks.requires_grad and bool((masks == 1).all()):
            return super().forward(tensors, mask)
        weights = masked_mix_weights(
            torch.cat([parameter for parameter in self.scalar_parameters]), masks
        )
        # (num_layers, 2 * D): layer j's forward weight over its forward half, and so on
        by_feature = torch.cat(
            [weights[row].unsqueeze(1).expand(-1, width) for row, width in enumerate(self._widths)],
            dim=1,
        )
        pieces = []
        for j in self._mixed:
            tensor = tensors[j]
            if self.do_layer_norm:
                assert mask is not None
                num_elements_not_masked = torch.sum(mask) * tensor.size(-1)
                tensor = masked_layer_norm(tensor, mask.unsqueeze(-1), num_elements_not_masked)
            pieces.append(by_feature[j] * tensor)
        return self.gamma * sum(pieces)


def masked_layer_norm(
    tensor: torch.Tensor, broadcast_mask: torch.Tensor, num_elements_not_masked: torch.Tensor
) -> torch.Tensor:
    """`ScalarMix`'s layer norm of one layer (over all its unmasked elements), as in AllenNLP."""
    tensor_masked = tensor * broadcast_mask
    mean = torch.sum(tensor_masked) / num_elements_not_masked
    variance = torch.sum(((tensor_masked - mean) * broadcast_mask) ** 2) / num_elements_not_masked
    return (tensor - mean) / torch.sqrt(variance + util.tiny_value_of_dtype(variance.dtype))


@TokenEmbedder.register("dense_lm_scalar_mix")
class DenseLMScalarMixEmbedder(LayerMaskedEmbedder, TokenEmbedder):
    """
    `ELMo_k = γ_k · Σ_j softmax(s_k)_j · h_j` over the `L + 1` layers of our biLM (`DenseBiLm`:
    the token layer and each dense-LSTM layer, forward and backward halves concatenated), for
    `k = 1 .. num_output_representations`.

    It is AllenNLP's own `Elmo` with our biLM as its `module`: dropout and sentence-boundary
    removal are AllenNLP's code, unchanged; each mix is a `LayerMaskedScalarMix`, AllenNLP's
    `ScalarMix` under the biLM's layer masks (its own code when no layer is masked). The LMs are
    frozen and always in eval mode; the trainable parameters are `s`
    (`..._elmo.scalar_mix_K.scalar_parameters.J`), `γ` (`..._elmo.scalar_mix_K.gamma`) and the
    optional projection. An L2 pull of `s` toward 0 (= uniform weights) is the regularizer
    block of allennlp-models' `ner_elmo`:
    `"regularizer": {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]}`.

    Registered as `"dense_lm_scalar_mix"`. Input: `(batch_size, num_tokens)` ids of the LMs'
    own vocabulary from the `dense_lm_tokens` indexer (any extra leading dims are flattened and
    restored). Output: `(batch_size, num_tokens, get_output_dim())`. The biLM stores the LMs in
    the task vocabulary as for `layer_selection`, so the model's archive reloads without the LM
    files.

    Pruning, as for `layer_selection` (the same keys, the biLM's one implementation): the
    biLM's `layer_mask` `(2, L)` multiplies each LM layer (fixed unless `trainable_layer_mask`,
    which the `layer_pruning` callback trains under the `layer_selection` penalty), and
    `forward_kept_layers` / `backward_kept_layers` keep only those layers of the loaded LMs
    (what `allennlp ldnet-prune` writes). The mix renormalises its softmax weights per
    direction over the layers that remain (`LayerMaskedScalarMix` says exactly what a soft
    mask does); `s` keeps one value per layer of the loaded LMs, so `scalar_mix_parameters`
    and the archive's keys do not change with pruning. The output width does not change either.

    Several output representations: `forward` returns the first (projected if
    `projection_dim`); all of them, unprojected, for the batch just embedded, are in
    `last_representations` (a list of `(batch_size, num_tokens, 2 * D)` tensors, still in the
    autograd graph) with the token mask in `last_mask` — the way `Elmo` returns
    `elmo_representations`. A model that feeds ELMo into a later layer reads
    `embedder.last_representations[1]` after calling its text field embedder.

    # Parameters

    forward_lm_archive : `str`
        `model.tar.gz` of a forward `dense_language_model` (formerly `forward_archive`, which
        still works with a deprecation warning).
    backward_lm_archive : `str`
        `model.tar.gz` of the matching backward one (same vocabulary, same number of layers;
        formerly `backward_archive`).
    num_output_representations : `int`, optional (default = `1`)
        How many separately weighted mixes to compute (>= 1).
    do_layer_norm : `bool`, optional (default = `False`)
        Layer-normalize each layer before mixing (`ScalarMix(do_layer_norm=True)`).
    dropout : `float`, optional (default = `0.5`)
        Dropout on each mix, as in `Elmo` / `elmo_token_embedder`.
    lm_dropout : `float`, optional (default = `0.0`)
        Dropout on the LMs' input word embeddings (training only).
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the LMs too (they stay in eval mode).
    store_lm_weights : `bool`, optional (default = `True`)
        With `False` the frozen LM weights stay out of the model's archive, which refers to
        the LM archives and checks the sha256 of their weights when loaded (`DenseBiLm`).
    projection_dim : `int`, optional
        Linear projection of the returned representation to this size.
    scalar_mix_parameters : `List[float]`, optional
        Fixed, non-trainable pre-softmax weights `s` (and `γ = 1`), one per layer (`L + 1`), as in
        `elmo_token_embedder`: `[0, ..., 0]` is the plain mean of the layers.
    initial_scalar_parameters : `List[float]`, optional
        Initial values of trainable `s` (default: zeros = uniform), one per layer (`L + 1`).
    vocab_namespace : `str`, optional (default = `"lm_tokens"`)
        The `dense_lm_tokens` indexer's `namespace`.
    trainable_layer_mask : `bool`, optional (default = `False`)
        Create the biLM's `layer_mask` trainable (what the `layer_pruning` callback needs).
    forward_kept_layers, backward_kept_layers : `List[int]`, optional (default = all)
        Layers (indices into the loaded LMs) to keep, as for `layer_selection`.
    """

    def __init__(
        self,
        forward_lm_archive: Optional[str] = None,
        backward_lm_archive: Optional[str] = None,
        num_output_representations: int = 1,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        lm_dropout: float = 0.0,
        requires_grad: bool = False,
        projection_dim: Optional[int] = None,
        scalar_mix_parameters: Optional[List[float]] = None,
        initial_scalar_parameters: Optional[List[float]] = None,
        vocab: Optional[Vocabulary] = None,
        vocab_namespace: str = LM_NAMESPACE,
        store_lm_weights: bool = True,
        forward_archive: Optional[str] = None,
        backward_archive: Optional[str] = None,
        trainable_layer_mask: bool = False,
        forward_kept_layers: Optional[List[int]] = None,
        backward_kept_layers: Optional[List[int]] = None,
    ) -> None:
        super().__init__()
        forward_lm_archive = _renamed_key(forward_lm_archive, forward_archive, "forward")
        backward_lm_archive = _renamed_key(backward_lm_archive, backward_archive, "backward")
        _check_settings(
            num_output_representations,
            dropout,
            projection_dim,
            scalar_mix_parameters,
            initial_scalar_parameters,
        )
        bilm = DenseBiLm(
            forward_lm_archive,
            backward_lm_archive,
            vocab=vocab,
            vocab_namespace=vocab_namespace,
            forward_kept_layers=forward_kept_layers,
            backward_kept_layers=backward_kept_layers,
            trainable_layer_mask=trainable_layer_mask,
            lm_dropout=lm_dropout,
            requires_grad=requires_grad,
            store_lm_weights=store_lm_weights,
        )
        for key, values in (
            ("scalar_mix_parameters", scalar_mix_parameters),
            ("initial_scalar_parameters", initial_scalar_parameters),
        ):
            _check_one_value_per_layer(key, values, bilm.num_layers)
        self._elmo = _masked_elmo(
            bilm,
            num_output_representations,
            do_layer_norm,
            dropout,
            scalar_mix_parameters,
            initial_scalar_parameters,
        )
        self.num_output_representations = num_output_representations
        self._projection: Optional[torch.nn.Linear] = None
        self.output_dim = bilm.get_output_dim()
        if projection_dim:
            self._projection = torch.nn.Linear(bilm.get_output_dim(), projection_dim)
            self.output_dim = projection_dim
        self.last_representations: List[torch.Tensor] = []
        self.last_mask: Optional[torch.BoolTensor] = None

    @property
    def bilm(self) -> DenseBiLm:
        return self._elmo._elmo_lstm  # type: ignore

    @property
    def scalar_mixes(self) -> List[LayerMaskedScalarMix]:
        """The mixes (`ScalarMix`es under the layer masks), one per output representation."""
        return list(self._elmo._scalar_mixes)

    @property
    def projection(self) -> Optional[torch.nn.Linear]:
        """The optional projection of the first representation (`projection_dim`)."""
        return self._projection

    def mix_multiply_adds(self) -> int:
        """
        Multiply-adds per token of the mixes (`tagging/flops.py`): for each output
        representation, one per feature of each layer half it mixes (the token layer and every
        kept layer, per direction); layer norm, the softmax and `γ` are not counted.
        """
        widths = self.bilm.layer_widths()
        per_mix = sum((1 + len(self.bilm.kept_layers[d])) * widths[d] for d in DIRECTIONS)
        return self.num_output_representations * per_mix

    def get_output_dim(self) -> int:
        return self.output_dim

    def forward(self, tokens: torch.LongTensor) -> torch.Tensor:  # type: ignore
        """
        # Parameters

        tokens : `torch.LongTensor`, `(batch_size, num_tokens)` (or `(batch_size, ..., num_tokens)`)
            LM vocabulary ids, 0 = padding.

        # Returns

        The first representation, `(batch_size, num_tokens, get_output_dim())`.
        """
        original_shape = tokens.size()
        flat_tokens = tokens.reshape(-1, original_shape[-1])
        elmo_output: Dict = self._elmo(flat_tokens)
        self.last_representations = [
            representation.view(*original_shape, -1)
            for representation in elmo_output["elmo_representations"]
        ]
        self.last_mask = elmo_output["mask"].view(original_shape)
        representation = self.last_representations[0]
        if self._projection is not None:
            representation = self._projection(representation)
        return representation


def _check_settings(
    num_output_representations: int,
    dropout: float,
    projection_dim: Optional[int],
    scalar_mix_parameters: Optional[List[float]],
    initial_scalar_parameters: Optional[List[float]],
) -> None:
    """The `ConfigurationError`s of settings that need no LM."""
    if num_output_representations < 1:
        raise ConfigurationError(
            f"num_output_representations must be >= 1, got {num_output_representations}."
        )
    if not 0.0 <= dropout < 1.0:
        raise ConfigurationError(f"dropout must be in [0, 1), got {dropout}.")
    if projection_dim is not None and projection_dim < 1:
        raise ConfigurationError(f"projection_dim must be >= 1 or null, got {projection_dim}.")
    if scalar_mix_parameters is not None and initial_scalar_parameters is not None:
        raise ConfigurationError(
            "Give scalar_mix_parameters (fixed weights) or initial_scalar_parameters "
            "(trainable weights), not both."
        )


def _check_one_value_per_layer(key: str, values: Optional[List[float]], num_layers: int) -> None:
    if values is not None and len(values) != num_layers:
        raise ConfigurationError(
            f"{key} has {len(values)} values but the biLM has {num_layers} layers "
            f"(the token layer + {num_layers - 1} LSTM layers): give one value per layer."
        )


def _renamed_key(value: Optional[str], old_value: Optional[str], direction: str) -> str:
    """The archive given under the key `<direction>_lm_archive` or its old name."""
    new_key, old_key = f"{direction}_lm_archive", f"{direction}_archive"
    if old_value is not None:
        if value is not None:
            raise ConfigurationError(
                f"dense_lm_scalar_mix: give {new_key} only, not also {old_key} (its old name)."
            )
        message = (
            f"dense_lm_scalar_mix: the key {old_key!r} is deprecated and will be removed; "
            f"call it {new_key!r}."
        )
        warnings.warn(message, DeprecationWarning)
        logger.warning(message)
        return old_value
    if value is None:
        raise ConfigurationError(f"dense_lm_scalar_mix needs {new_key} (a dense LM archive).")
    return value


def _masked_elmo(
    bilm: DenseBiLm,
    num_output_representations: int,
    do_layer_norm: bool,
    dropout: float,
    scalar_mix_parameters: Optional[List[float]],
    initial_scalar_parameters: Optional[List[float]],
) -> Elmo:
    """
    AllenNLP's `Elmo` over `bilm`, each of its `ScalarMix`es replaced by a
    `LayerMaskedScalarMix` under the biLM's layer masks, with trainable `s` starting at
    `initial_scalar_parameters` (the embedder's keys of the same names).
    """
    elmo = Elmo(
        options_file=None,
        weight_file=None,
        num_output_representations=num_output_representations,
        do_layer_norm=do_layer_norm,
        dropout=dropout,
        scalar_mix_parameters=scalar_mix_parameters,
        module=bilm,
    )
    for k in range(num_output_representations):
        mix = LayerMaskedScalarMix(
            bilm,
            do_layer_norm=do_layer_norm,
            initial_scalar_parameters=scalar_mix_parameters,
            trainable=scalar_mix_parameters is None,
        )
        elmo.add_module(f"scalar_mix_{k}", mix)
        elmo._scalar_mixes[k] = mix
    if initial_scalar_parameters is not None:
        with torch.no_grad():
            for scalar_mix in elmo._scalar_mixes:
                for parameter, value in zip(
                    scalar_mix.scalar_parameters, initial_scalar_parameters
                ):
                    parameter.fill_(float(value))
    return elmo
