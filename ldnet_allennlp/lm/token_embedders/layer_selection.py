"""
LD-Net's contextual features for a tagger (Liu et al., 2018; `PAPERS.md` §1): the dense outputs
of a frozen forward and a frozen backward dense LM (`DenseBiLm`), concatenated and projected,

    r_t = ReLU(W_cr · dropout([h_t ; h^r_t]) + b_cr),

with one scalar mask per LM layer and direction (`layer_mask`, `z`) for layer selection.
"""

from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders import TokenEmbedder

from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm, LayerMaskedEmbedder
from ldnet_allennlp.lm.modules.lm_archives import LM_NAMESPACE


@TokenEmbedder.register("layer_selection")
class LayerSelectionTokenEmbedder(LayerMaskedEmbedder, TokenEmbedder):
    """
    LD-Net features `r_t = ReLU(W_cr · dropout([h_t ; h^r_t]) + b_cr)` over a `DenseBiLm`
    (`self.bilm`, which loads, stores and runs the two LMs; see its docstring for how a tagger
    archive reloads without the LM files).

    Input: the ids of the `dense_lm_tokens` indexer, `(batch_size, num_tokens)` (0 = padding).
    Output: `(batch_size, num_tokens, projection_dim)` (at padding positions `ReLU(b_cr)`; the
    tagger masks padding).

    Layer masks: `layer_mask` (the biLM's), shape `(2, num_layers)` (row 0 forward, row 1
    backward), initialised to 1 for kept layers. Fixed unless `trainable_layer_mask` is true or
    `set_layer_mask_trainable(True)` is called (the pruning callback does this, and penalises /
    clamps it). `forward_kept_layers` / `backward_kept_layers` prune the loaded LMs at
    construction, so a pruned tagger is an ordinary config; `W_cr` then reads the pruned LMs'
    outputs. The masks, kept layers and their accessors (`layer_mask`, `kept_layers()`,
    `set_layer_mask_trainable`, `forward_lm`, `backward_lm`) are the biLM's, shared with
    `dense_lm_scalar_mix` (`LayerMaskedEmbedder`).

    Registered as `"layer_selection"`.

    # Parameters

    forward_lm_archive : `str`
        A `dense_language_model` archive with direction `"forward"`.
    backward_lm_archive : `str`
        One with direction `"backward"` and the same vocabulary.
    projection_dim : `int`, optional (default = `100`)
        Output dim of `W_cr` (LD-Net: 100).
    dropout : `float`, optional (default = `0.5`)
        Dropout on `[h_t ; h^r_t]` before `W_cr`.
    lm_dropout : `float`, optional (default = `0.0`)
        Dropout on the LMs' input embeddings.
    trainable_layer_mask : `bool`, optional (default = `false`)
    forward_kept_layers, backward_kept_layers : `List[int]`, optional
        Layers (indices into the loaded LM) to keep; default all.
    add_sentence_boundaries : `bool`, optional (default = `true`)
        Wrap each sentence in the LM's `<S>` / `</S>`, as in LM training.
    vocab_namespace : `str`, optional (default = `"lm_tokens"`)
        The indexer's `namespace`.
    store_lm_weights : `bool`, optional (default = `true`)
        With `false` the frozen LM weights stay out of the tagger's archive, which refers to the LM
        archives and checks the sha256 of their weights when loaded (`DenseBiLm`; `allennlp
        ldnet-prune --reference-lms`).
    """

    def __init__(
        self,
        forward_lm_archive: str,
        backward_lm_archive: str,
        vocab: Optional[Vocabulary] = None,
        projection_dim: int = 100,
        dropout: float = 0.5,
        lm_dropout: float = 0.0,
        trainable_layer_mask: bool = False,
        forward_kept_layers: Optional[List[int]] = None,
        backward_kept_layers: Optional[List[int]] = None,
        add_sentence_boundaries: bool = True,
        vocab_namespace: str = LM_NAMESPACE,
        store_lm_weights: bool = True,
    ) -> None:
        super().__init__()
        if projection_dim < 1:
            raise ConfigurationError(f"projection_dim must be >= 1, got {projection_dim}.")
        if not 0.0 <= dropout < 1.0:
            raise ConfigurationError(f"dropout must be in [0, 1), got {dropout}.")
        self.bilm = DenseBiLm(
            forward_lm_archive,
            backward_lm_archive,
            vocab=vocab,
            vocab_namespace=vocab_namespace,
            forward_kept_layers=forward_kept_layers,
            backward_kept_layers=backward_kept_layers,
            trainable_layer_mask=trainable_layer_mask,
            lm_dropout=lm_dropout,
            add_sentence_boundaries=add_sentence_boundaries,
            store_lm_weights=store_lm_weights,
        )
        self._dropout = torch.nn.Dropout(dropout)
        self.projection = torch.nn.Linear(self.lm_output_dim, projection_dim)
        self.output_dim = projection_dim

    @property
    def num_layers(self) -> int:
        """The number of layers of each loaded LM (the width of `layer_mask`)."""
        return self.bilm.num_lm_layers

    @property
    def lm_output_dim(self) -> int:
        """Dim of `[h_t ; h^r_t]`, the input of `W_cr` (after any pruning)."""
        return self.bilm.dense_output_dim()

    def get_output_dim(self) -> int:
        return self.output_dim

    def lm_features(self, tokens: torch.LongTensor) -> torch.Tensor:
        """`[h_t ; h^r_t]`, `(batch_size, num_tokens, lm_output_dim)`, zero at padding."""
        return self.bilm.dense_features(tokens)

    def forward(self, tokens: torch.LongTensor) -> torch.Tensor:  # type: ignore
        """
        # Parameters

        tokens : `torch.LongTensor`, `(batch_size, num_tokens)`
            Ids in the LM vocabulary (0 = padding).

        # Returns

        `r`, `(batch_size, num_tokens, projection_dim)`.
        """
        return torch.relu(self.projection(self._dropout(self.lm_features(tokens))))
