"""
ELMo-style scalar-mix token embedder (Peters et al., 2018; PAPERS.md §2) over our frozen dense
forward/backward LMs: a drop-in replacement for AllenNLP's `elmo_token_embedder`.
"""

import logging
import warnings
from typing import Dict, List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.elmo import Elmo
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm
from ldnet_allennlp.lm.modules.lm_archives import LM_NAMESPACE

logger = logging.getLogger(__name__)


@TokenEmbedder.register("dense_lm_scalar_mix")
class DenseLMScalarMixEmbedder(TokenEmbedder):
    """
    `ELMo_k = γ_k · Σ_j softmax(s_k)_j · h_j` over the `L + 1` layers of our biLM (`DenseBiLm`:
    the token layer and each dense-LSTM layer, forward and backward halves concatenated), for
    `k = 1 .. num_output_representations`.

    It is AllenNLP's own `Elmo` with our biLM as its `module`: `ScalarMix` (one per output
    representation), optional layer norm, dropout and sentence-boundary removal are AllenNLP's
    code, unchanged. The LMs are frozen and always in eval mode; the trainable parameters are
    `s` (`..._elmo.scalar_mix_K.scalar_parameters.J`), `γ` (`..._elmo.scalar_mix_K.gamma`) and the
    optional projection. An L2 pull of `s` toward 0 (= uniform weights) is the regularizer
    block of allennlp-models' `ner_elmo`:
    `"regularizer": {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]}`.

    Registered as `"dense_lm_scalar_mix"`. Input: `(batch_size, num_tokens)` ids of the LMs'
    own vocabulary from the `dense_lm_tokens` indexer (any extra leading dims are flattened and
    restored). Output: `(batch_size, num_tokens, get_output_dim())`. The biLM stores the LMs in
    the task vocabulary as for `layer_selection`, so the model's archive reloads without the LM
    files.

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
            lm_dropout=lm_dropout,
            requires_grad=requires_grad,
            store_lm_weights=store_lm_weights,
        )
        for key, values in (
            ("scalar_mix_parameters", scalar_mix_parameters),
            ("initial_scalar_parameters", initial_scalar_parameters),
        ):
            _check_one_value_per_layer(key, values, bilm.num_layers)
        self._elmo = Elmo(
            options_file=None,
            weight_file=None,
            num_output_representations=num_output_representations,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            scalar_mix_parameters=scalar_mix_parameters,
            module=bilm,
        )
        if initial_scalar_parameters is not None:
            with torch.no_grad():
                for scalar_mix in self._elmo._scalar_mixes:
                    for parameter, value in zip(
                        scalar_mix.scalar_parameters, initial_scalar_parameters
                    ):
                        parameter.fill_(float(value))
        self.num_output_representations = num_output_representations
        self._projection: Optional[torch.nn.Linear] = None
        self.output_dim = bilm.get_output_dim()
        if projection_dim:
            self._projection = torch.nn.Linear(bilm.get_output_dim(), projection_dim)
            self.output_dim = projection_dim
        self.last_representations: List[torch.Tensor] = []
        self.last_mask: Optional[torch.BoolTensor] = None
        self._register_load_state_dict_pre_hook(self._add_legacy_layer_mask)

    @property
    def bilm(self) -> DenseBiLm:
        return self._elmo._elmo_lstm  # type: ignore

    @property
    def scalar_mixes(self):
        """The `ScalarMix` modules, one per output representation."""
        return list(self._elmo._scalar_mixes)

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

    def _add_legacy_layer_mask(self, state_dict, prefix, *args) -> None:
        """Archives written before the biLM had layer masks: all ones (what it computed)."""
        bilm = f"{prefix}_elmo._elmo_lstm."
        if any(key.startswith(bilm) for key in state_dict):
            state_dict.setdefault(f"{bilm}layer_mask", self.bilm.layer_mask.detach().clone())


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
