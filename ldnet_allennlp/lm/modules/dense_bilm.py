"""
The dense biLM: a forward and a backward `dense_language_model` run side by side as one feature
extractor, under per-layer masks. It is the engine under both LM-feature token embedders
(`layer_selection`, `dense_lm_scalar_mix`), as `allennlp.modules.Elmo` is under
`elmo_token_embedder`. The LM archives are opened, checked, stored in the task vocabulary and
fingerprinted by `lm_archives.py`.
"""

from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS, DenseLanguageModel
from ldnet_allennlp.lm.modules.feature_cache import LmFeatureCache
from ldnet_allennlp.modules.sentence_boundaries import (
    add_sentence_boundaries,
    remove_sentence_boundaries,
)
from ldnet_allennlp.lm.modules.lm_archives import (
    BOS_TOKEN,
    EOS_TOKEN,
    LM_NAMESPACE,
    check_matching_lms,
    fill_in_lm_weights,
    leave_out_lm_weights,
    lm_words,
    load_or_rebuild_lm,
    store_in_vocabulary,
)


class DenseBiLm(torch.nn.Module):
    """
    A forward and a backward dense LM run side by side as one frozen biLM, under per-layer masks.

    Loading (`lm_archives.py`): each LM comes from its `dense_language_model` archive
    (`load_dense_lm`); the two must read in their directions and share one `tokens` vocabulary
    (with `<S>` and `</S>`) and one number of layers. Given the task `vocab`, the LMs' words are
    copied into its namespace `vocab_namespace` (in the LMs' order, so the `dense_lm_tokens`
    indexer's ids are the LMs' ids) and their model configs into `<vocab_namespace>_config_tags`.
    Both are saved with the task model's archive and the LM weights are task-model parameters,
    so the task archive reloads without the LM files: when an archive path no longer exists, its
    LM is rebuilt from the stored config and words. When it does exist it is read and checked
    against the stored words.

    Running (`forward`, `dense_features`): token ids `(batch_size, num_tokens)` in the LMs'
    vocabulary, 0 = padding; each sentence is wrapped in `<S> ... </S>` as in LM training
    (`add_sentence_boundaries`); `lm_dropout` (training only) drops out the LMs' input word
    embeddings; each LM's layer `l` is multiplied by `layer_mask[row, l]` (row 0 forward, row 1
    backward). The LMs always stay in eval mode (no LM dropout or layer dropout) and, unless
    `requires_grad` or a trainable `layer_mask`, run without building a graph. When they do build
    one, their LSTMs run in training mode, which changes no number but lets cuDNN backpropagate
    through them (`DenseLSTMStack.forward_layers`).

    Pruned shape: `forward_kept_layers` / `backward_kept_layers` keep only those layers of the
    loaded LMs (`DenseLSTMStack.pruned`); `layer_mask` keeps its `(2, num_lm_layers)` shape, the
    entries of removed layers are 0 and unused. Everything about masks and kept layers lives
    here, for both embedders (`LayerMaskedEmbedder` is what they expose of it): `kept_layers`,
    `kept_layer_masks()` (what multiplies each layer an LM runs), `surviving_layers()` (what
    pruning keeps), `mix_masks()` (the masks by layer of the loaded LMs, for a scalar mix).

    # Parameters

    forward_lm_archive : `str`
        `model.tar.gz` of a `dense_language_model` with `direction: "forward"`.
    backward_lm_archive : `str`
        The matching `"backward"` one.
    vocab : `Vocabulary`, optional
        The task vocabulary, to store the LMs in (and to rebuild them from when the archives are
        gone).
    vocab_namespace : `str`, optional (default = `"lm_tokens"`)
        The `dense_lm_tokens` indexer's `namespace`.
    forward_kept_layers, backward_kept_layers : `List[int]`, optional (default = all)
    trainable_layer_mask : `bool`, optional (default = `False`)
    lm_dropout : `float`, optional (default = `0.0`)
    add_sentence_boundaries : `bool`, optional (default = `True`)
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the LMs with the task (still without their dropout or layer dropout).
    store_lm_weights : `bool`, optional (default = `True`)
        With `False`, the frozen LMs' weights are left out of the task model's `state_dict` (so
        out of its checkpoints and archive, ~10M parameters for 40k-word LMs): the archive refers
        to the LM archives instead, and stores only `lm_weights_sha256`, `(2, 32)` uint8, the
        sha256 of each (pruned) LM's weights as the model saw them. Loading such a state dict
        takes the LM weights from the LM archives read at construction and checks them against
        that fingerprint, so a different LM under the same path is an error, never a silent
        swap; a missing LM archive is an error too (there is no stored copy to fall back on).
        Needs frozen LMs (`requires_grad` false).
    """

    def __init__(
        self,
        forward_lm_archive: str,
        backward_lm_archive: str,
        vocab: Optional[Vocabulary] = None,
        vocab_namespace: str = LM_NAMESPACE,
        forward_kept_layers: Optional[Sequence[int]] = None,
        backward_kept_layers: Optional[Sequence[int]] = None,
        trainable_layer_mask: bool = False,
        lm_dropout: float = 0.0,
        add_sentence_boundaries: bool = True,
        requires_grad: bool = False,
        store_lm_weights: bool = True,
    ) -> None:
        super().__init__()
        if not 0.0 <= lm_dropout < 1.0:
            raise ConfigurationError(f"lm_dropout must be in [0, 1), got {lm_dropout}.")
        if requires_grad and not store_lm_weights:
            raise ConfigurationError(
                "store_lm_weights false needs frozen LMs: with requires_grad true the LM weights "
                "are trained with the task and must be stored in its archive."
            )
        self.vocab_namespace = vocab_namespace
        archives = {"forward": forward_lm_archive, "backward": backward_lm_archive}
        self._archives = archives
        loaded = {d: load_or_rebuild_lm(d, archives[d], vocab, vocab_namespace) for d in DIRECTIONS}
        lms = {d: loaded[d][0] for d in DIRECTIONS}
        self._read_from_archive = {d: loaded[d][2] for d in DIRECTIONS}
        check_matching_lms(lms["forward"], lms["backward"], archives)
        if vocab is not None:
            configs = {d: loaded[d][1] for d in DIRECTIONS}
            store_in_vocabulary(vocab, vocab_namespace, lm_words(lms["forward"]), configs)

        self.num_lm_layers = lms["forward"].num_layers
        kept = {
            "forward": self._check_kept(forward_kept_layers, "forward_kept_layers"),
            "backward": self._check_kept(backward_kept_layers, "backward_kept_layers"),
        }
        for direction in DIRECTIONS:
            lm = lms[direction]
            lm.drop_softmax()
            if kept[direction] != list(range(self.num_lm_layers)):
                lm.keep_layers(kept[direction])
            for parameter in lm.parameters():
                parameter.requires_grad_(requires_grad)
        self.forward_lm = lms["forward"]
        self.backward_lm = lms["backward"]
        self.kept_layers = kept
        self.vocab = self.forward_lm.vocab
        initial = torch.zeros(2, self.num_lm_layers)
        for row, direction in enumerate(DIRECTIONS):
            initial[row, kept[direction]] = 1.0
        self.layer_mask = torch.nn.Parameter(initial, requires_grad=trainable_layer_mask)
        self.requires_grad = requires_grad
        self.lm_dropout = lm_dropout
        self._lm_input_dropout = torch.nn.Dropout(lm_dropout)
        self.add_sentence_boundaries = add_sentence_boundaries
        self.store_lm_weights = store_lm_weights
        self._register_state_dict_hook(leave_out_lm_weights)
        self._register_load_state_dict_pre_hook(self._fill_in_lm_weights)
        self.bos_index = self.vocab.get_token_index(BOS_TOKEN, "tokens")
        self.eos_index = self.vocab.get_token_index(EOS_TOKEN, "tokens")
        # `Elmo(module=...)`'s contract: the number of layers a ScalarMix mixes (the token layer
        # and every layer of the loaded LMs, whatever is pruned: removed layers are zeros with
        # mask 0), and their width
        self.num_layers = self.num_lm_layers + 1
        self._layer_dims = {d: max(lms[d].embedding_dim, lms[d].hidden_size) for d in DIRECTIONS}
        self.feature_cache: Optional[LmFeatureCache] = None
        self.train(False)

    # ------------------------------------------------------------------ public

    def lm(self, direction: str) -> DenseLanguageModel:
        return self.forward_lm if direction == "forward" else self.backward_lm

    def get_output_dim(self) -> int:
        """The width of one layer in `forward`'s `activations` (both directions)."""
        return sum(self._layer_dims.values())

    def dense_output_dim(self) -> int:
        """The width of `dense_features`: both LMs' dense outputs (after any pruning)."""
        return sum(self.lm(d).get_output_dim() for d in DIRECTIONS)

    def kept_layer_masks(self) -> Dict[str, torch.Tensor]:
        """
        Per direction, the entries of `layer_mask` of the layers the LM keeps, `(len(kept),)`:
        what multiplies each of its layers.
        """
        return {
            direction: self.layer_mask[row, self.kept_layers[direction]]
            for row, direction in enumerate(DIRECTIONS)
        }

    def mix_masks(self) -> torch.Tensor:
        """
        The layer masks by layer of the loaded LMs, token layer included, as a scalar mix over
        `forward`'s activations reads them.

        # Returns

        `(2, num_lm_layers + 1)` (row 0 forward, row 1 backward; in the graph of `layer_mask`):
        column 0 is 1 (the token layer, never masked), column `l + 1` is `layer_mask[row, l]`
        for a kept layer `l` and 0 for a removed one.
        """
        kept = torch.zeros_like(self.layer_mask, dtype=torch.bool)
        for row, direction in enumerate(DIRECTIONS):
            kept[row, self.kept_layers[direction]] = True
        masks = torch.where(kept, self.layer_mask, torch.zeros_like(self.layer_mask))
        return torch.cat([torch.ones_like(masks[:, :1]), masks], dim=1)

    def layer_widths(self) -> Dict[str, int]:
        """Per direction, the width of its half of each layer in `forward`'s `activations`."""
        return dict(self._layer_dims)

    def surviving_layers(self) -> Dict[str, List[int]]:
        """
        Per direction, the layers that survive (indices into the loaded LMs): a layer survives
        when its mask is > 0, among the kept layers. The one statement of that rule, for
        pruning, serving and export.
        """
        mask = self.layer_mask.detach()
        return {
            direction: [layer for layer in self.kept_layers[direction] if mask[row, layer] > 0]
            for row, direction in enumerate(DIRECTIONS)
        }

    def set_layer_mask_trainable(self, trainable: bool) -> None:
        self.layer_mask.requires_grad_(trainable)

    def cache_features(self, on: bool) -> None:
        """
        Turns the per-sentence cache of the LMs' layers (`LmFeatureCache`) on (empty) or off.
        While on, `layers` takes a sentence's layers from the cache whenever they cannot change:
        frozen LMs, a layer mask that is not trained, no `lm_dropout` in training. For training
        runs over frozen LMs (the `lm_feature_cache` trainer callback); its memory grows with
        every new sentence, `2 · (num_lm_layers + 1) · 128` floats a token for 6-layer LMs.
        """
        self.feature_cache = LmFeatureCache() if on else None

    def train(self, mode: bool = True) -> "DenseBiLm":
        """
        The LMs stay in eval mode whatever the task model does: no dropout and no layer dropout
        inside them (their LSTMs still run in training mode when autograd goes through them).
        """
        super().train(mode)
        self.forward_lm.eval()
        self.backward_lm.eval()
        return self

    def layers(
        self, tokens: torch.LongTensor
    ) -> Tuple[Dict[str, List[torch.Tensor]], torch.BoolTensor]:
        """
        Both LMs' layers under the layer masks.

        # Parameters

        tokens : `torch.LongTensor`, `(batch_size, num_tokens)`
            LM vocabulary ids, 0 = padding.

        # Returns

        Per direction, the masked layers `[x, h_l for each kept l]`, each
        `(batch_size, num_tokens', dim)`, and their mask `(batch_size, num_tokens')`, where
        `num_tokens' = num_tokens + 2` with sentence boundaries, else `num_tokens`.
        """
        if tokens.dim() != 2:
            raise ValueError(
                f"DenseBiLm expects (batch_size, num_tokens) token ids, got shape "
                f"{tuple(tokens.shape)}."
            )
        if self.add_sentence_boundaries:
            tokens = add_sentence_boundaries(tokens, self.bos_index, self.eos_index)
        mask = tokens != 0
        needs_graph = self.requires_grad or self.layer_mask.requires_grad
        dropout = self.training and self.lm_dropout > 0.0
        with torch.set_grad_enabled(torch.is_grad_enabled() and needs_graph):
            layer_masks = self.kept_layer_masks()

            def compute(ids: torch.LongTensor, ids_mask: torch.BoolTensor):
                layers = {}
                for direction in DIRECTIONS:
                    lm = self.lm(direction)
                    embedded = lm.embed_tokens(ids)
                    if dropout:
                        embedded = self._lm_input_dropout(embedded)
                    layers[direction] = lm.dense_layers(embedded, ids_mask, layer_masks[direction])
                return layers

            if self.feature_cache is not None and not needs_graph and not dropout:
                return self.feature_cache.layers(tokens, mask, layer_masks, compute), mask
            return compute(tokens, mask), mask

    def dense_features(self, tokens: torch.LongTensor) -> torch.Tensor:
        """
        `[h_t ; h^r_t]`: both LMs' dense outputs, sentence boundaries removed,
        `(batch_size, num_tokens, dense_output_dim())`, zero at padding.
        """
        layers, _ = self.layers(tokens)
        features = torch.cat([layer for d in DIRECTIONS for layer in layers[d]], dim=-1)
        if self.add_sentence_boundaries:
            features = remove_sentence_boundaries(features, tokens != 0)
        return features

    def forward(  # type: ignore
        self, inputs: torch.LongTensor, word_inputs: Optional[torch.Tensor] = None
    ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        The interface of AllenNLP's ELMo biLM (`Elmo(module=...)`).

        # Parameters

        inputs : `torch.LongTensor`, `(batch_size, num_tokens)`
            LM vocabulary ids, 0 = padding.
        word_inputs : `torch.Tensor`, optional
            Ignored (in `Elmo`'s signature for its cached-vocabulary mode).

        # Returns

        `{"activations": [(batch_size, num_tokens + 2, get_output_dim())] * num_layers,
        "mask": (batch_size, num_tokens + 2)}`, sentence boundaries included (`Elmo` removes
        them): layer 0 is `[x_fwd; x_bwd]`, layer j `[z_j_fwd h_j_fwd; z_j_bwd h_j_bwd]` for
        layer `j - 1` of the loaded LMs, each half zero-padded to `max(embedding_dim,
        hidden_size)`; the half of a layer its LM does not keep (pruned away) is zeros.
        """
        layers, mask = self.layers(inputs)
        by_lm_layer = {d: self._by_lm_layer(layers[d], d) for d in DIRECTIONS}
        activations = [
            torch.cat(
                [
                    _pad_to(forward, self._layer_dims["forward"]),
                    _pad_to(backward, self._layer_dims["backward"]),
                ],
                dim=-1,
            )
            for forward, backward in zip(by_lm_layer["forward"], by_lm_layer["backward"])
        ]
        return {"activations": activations, "mask": mask}

    def _by_lm_layer(self, pieces: List[torch.Tensor], direction: str) -> List[torch.Tensor]:
        """
        `[x, h_l for each kept l]` as `[x, h_0, ..., h_{num_lm_layers - 1}]`, a removed layer
        as a `(batch_size, num_tokens, 0)` tensor (`_pad_to` makes it zeros).
        """
        kept = self.kept_layers[direction]
        empty = pieces[0][..., :0]
        return [pieces[0]] + [
            pieces[1 + kept.index(layer)] if layer in kept else empty
            for layer in range(self.num_lm_layers)
        ]

    # ------------------------------------------------------------------ construction helpers

    def _fill_in_lm_weights(self, state_dict, prefix, *args) -> None:
        """Load pre-hook: `lm_archives.fill_in_lm_weights` with this biLM's LMs."""
        lms = {d: self.lm(d) for d in DIRECTIONS}
        fill_in_lm_weights(lms, self._archives, self._read_from_archive, state_dict, prefix)

    def _check_kept(self, kept: Optional[Sequence[int]], key: str) -> List[int]:
        if kept is None:
            return list(range(self.num_lm_layers))
        # may be empty: an LM pruned of every layer contributes its token embeddings only
        kept = sorted(set(int(i) for i in kept))
        if kept and (kept[0] < 0 or kept[-1] >= self.num_lm_layers):
            raise ConfigurationError(
                f"{key} {kept} out of range for LMs of {self.num_lm_layers} layers."
            )
        return kept


class LayerMaskedEmbedder:
    """
    What a token embedder over a `DenseBiLm` (its `bilm`) exposes of the biLM's layer masks and
    kept layers: `layer_selection` and `dense_lm_scalar_mix` both inherit it, so pruning (the
    `layer_pruning` callback, `ldnet-prune`), serving and export treat them alike.
    """

    bilm: DenseBiLm

    @property
    def layer_mask(self) -> torch.nn.Parameter:
        """The biLM's `layer_mask`, `(2, num_lm_layers)` (row 0 forward, row 1 backward)."""
        return self.bilm.layer_mask

    @property
    def forward_lm(self) -> DenseLanguageModel:
        return self.bilm.forward_lm

    @property
    def backward_lm(self) -> DenseLanguageModel:
        return self.bilm.backward_lm

    def set_layer_mask_trainable(self, trainable: bool) -> None:
        """Turns training of `layer_mask` on or off (for LD-Net's pruning phase)."""
        self.bilm.set_layer_mask_trainable(trainable)

    def kept_layers(self) -> Dict[str, List[int]]:
        """Layers (indices into the loaded LMs) that this embedder runs, per direction."""
        return {direction: list(kept) for direction, kept in self.bilm.kept_layers.items()}


def find_dense_bilms(model: torch.nn.Module) -> List[Tuple[str, DenseBiLm]]:
    """
    Every `DenseBiLm` in `model` with its module name: the one way to find the layer masks
    (`bilm.layer_mask`, `(2, num_lm_layers)`), used by pruning, serving and FLOPs counting.
    """
    return [(name, m) for name, m in model.named_modules() if isinstance(m, DenseBiLm)]


@contextmanager
def lm_weights_stored(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, `model`'s biLMs put their LM weights in `state_dict` whatever their
    `store_lm_weights` (to slice or copy the full weights, e.g. when pruning)."""
    bilms = [bilm for _, bilm in find_dense_bilms(model)]
    before = [bilm.store_lm_weights for bilm in bilms]
    for bilm in bilms:
        bilm.store_lm_weights = True
    try:
        yield
    finally:
        for bilm, store in zip(bilms, before):
            bilm.store_lm_weights = store


def _pad_to(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """Zero-pads the last dimension of `tensor` up to `dim`."""
    missing = dim - tensor.size(-1)
    if missing == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, missing))
