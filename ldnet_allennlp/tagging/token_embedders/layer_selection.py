"""
LD-Net's contextual features for a tagger (Liu et al., 2018; `PAPERS.md` §1): a frozen forward
and a frozen backward dense LM, their dense outputs concatenated and projected,

    r_t = ReLU(W_cr · dropout([h_t ; h^r_t]) + b_cr),

with one scalar mask per LM layer and direction (`layer_mask`, `z`) for layer selection.
"""

import json
import logging
import os
from typing import Dict, List, Optional, Sequence

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn import util

from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel
from ldnet_allennlp.modules.dense_lstm import run_backward

logger = logging.getLogger(__name__)

LM_NAMESPACE = "lm_tokens"
DIRECTIONS = ("forward", "backward")


def lm_config_namespace(namespace: str) -> str:
    """
    The tagger-vocabulary namespace that stores the LMs' model configs: one JSON string per
    direction (each has its `"direction"`).
    """
    return f"{namespace}_config_tags"


@TokenIndexer.register("dense_lm_tokens")
class DenseLMTokenIndexer(SingleIdTokenIndexer):
    """
    Maps each token to its id in the dense LMs' own word vocabulary, which the
    `layer_selection` embedder copies into the tagger's vocabulary namespace `namespace`
    (default `"lm_tokens"`) when it is built, in the LM's order.  A word the LM does not know
    (including any word with characters the LM never saw) gets the LM's OOV id; nothing is
    counted from the tagging data, so the namespace is exactly the LM's.

    Registered as `"dense_lm_tokens"`.  Config keys:

    namespace : `str`, optional (default `"lm_tokens"`) — must equal the embedder's
        `vocab_namespace`.
    lowercase_tokens : `bool`, optional (default `false`) — the dense LMs are trained on cased
        text (`dense_lm_text` reader); set this only if your LM was trained lowercased.
    token_min_padding_length : `int`, optional (default `0`)
    """

    def __init__(
        self,
        namespace: str = LM_NAMESPACE,
        lowercase_tokens: bool = False,
        token_min_padding_length: int = 0,
    ) -> None:
        super().__init__(
            namespace=namespace,
            lowercase_tokens=lowercase_tokens,
            token_min_padding_length=token_min_padding_length,
        )

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        # The namespace is the LM's vocabulary, copied in by the embedder: never grown here.
        return

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary):
        if vocabulary.get_vocab_size(self.namespace) <= 2:
            raise ConfigurationError(
                f"dense_lm_tokens: the vocabulary namespace {self.namespace!r} is empty. It is "
                "filled with the LM's words by a `layer_selection` token embedder whose "
                "`vocab_namespace` is the same; use the two together."
            )
        return super().tokens_to_indices(tokens, vocabulary)


@TokenEmbedder.register("layer_selection")
class LayerSelectionTokenEmbedder(TokenEmbedder):
    """
    LD-Net features from a frozen forward and a frozen backward dense LM
    (`dense_language_model` archives), `r_t = ReLU(W_cr · dropout([h_t ; h^r_t]) + b_cr)`.

    Input: the ids of the `dense_lm_tokens` indexer, `(batch_size, num_tokens)` (0 = padding).
    Output: `(batch_size, num_tokens, projection_dim)` (at padding positions `ReLU(b_cr)`; the
    tagger masks padding).

    Frozen LMs: their parameters have `requires_grad = False` and they are always in eval mode
    (no LM dropout or layer-wise dropout), also while the tagger trains; when the masks are
    fixed they run under `torch.no_grad()`.  `lm_dropout` (training only) is dropout on the
    LMs' input word embeddings.

    Layer masks: one parameter `layer_mask`, shape `(2, num_layers)` (row 0 forward, row 1
    backward), initialised to 1 and passed to each LM's `layer_mask`.  Fixed
    (`requires_grad = False`) unless `trainable_layer_mask` is true or
    `set_layer_mask_trainable(True)` is called (the pruning callback does this, and
    penalises / clamps it).

    Pruned shape: `forward_kept_layers` / `backward_kept_layers` prune the loaded LMs at
    construction (`DenseLSTMStack.pruned`), so a pruned tagger is an ordinary config.
    `layer_mask` keeps its `(2, num_layers)` shape; the entries of removed layers are unused
    (set to 0), those of kept layers stay fixed multipliers.  `W_cr` then reads the pruned
    LMs' outputs (`get_output_dim()` of each).

    Self-contained tagger archives: at construction, the LMs' word vocabulary is copied into
    the tagger vocabulary (namespace `vocab_namespace`) and their model configs into the
    namespace `<vocab_namespace>_config_tags`; both are saved in the tagger's archive, and
    the LM weights are ordinary tagger parameters.  So `load_archive(tagger.tar.gz)` works
    when the LM archive paths no longer exist: the LMs are rebuilt from the stored configs and
    their weights come from the tagger's weights.  If the paths do exist they are read and
    checked against the stored vocabulary.

    Registered as `"layer_selection"`.  Config keys:

    forward_lm_archive : `str` — a `dense_language_model` archive with direction `"forward"`.
    backward_lm_archive : `str` — one with direction `"backward"` and the same vocabulary.
    projection_dim : `int`, optional (default `100`) — output dim of `W_cr` (LD-Net: 100).
    dropout : `float`, optional (default `0.5`) — dropout on `[h_t ; h^r_t]` before `W_cr`.
    lm_dropout : `float`, optional (default `0.0`) — dropout on the LMs' input embeddings.
    trainable_layer_mask : `bool`, optional (default `false`)
    forward_kept_layers, backward_kept_layers : `List[int]`, optional — layers (indices into
        the loaded LM) to keep; default all.
    add_sentence_boundaries : `bool`, optional (default `true`) — wrap each sentence in the
        LM's `<S>` / `</S>`, as in LM training.
    vocab_namespace : `str`, optional (default `"lm_tokens"`) — the indexer's `namespace`.
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
    ) -> None:
        super().__init__()
        if projection_dim < 1:
            raise ConfigurationError(f"projection_dim must be >= 1, got {projection_dim}.")
        for key, value in (("dropout", dropout), ("lm_dropout", lm_dropout)):
            if not 0.0 <= value < 1.0:
                raise ConfigurationError(f"{key} must be in [0, 1), got {value}.")
        self.vocab_namespace = vocab_namespace
        self.add_sentence_boundaries = add_sentence_boundaries
        self.lm_dropout = lm_dropout

        archives = {"forward": forward_lm_archive, "backward": backward_lm_archive}
        lms = {d: self._load_lm(d, archives[d], vocab) for d in DIRECTIONS}
        self._check_same_vocabulary(lms, archives)
        if vocab is not None:
            self._store_in_vocabulary(vocab, lms)

        if lms["forward"].num_layers != lms["backward"].num_layers:
            raise ConfigurationError(
                f"forward_lm_archive has {lms['forward'].num_layers} layers but "
                f"backward_lm_archive has {lms['backward'].num_layers}; layer_selection needs "
                "LMs of the same depth (one (2, num_layers) layer_mask)."
            )
        self.num_layers = lms["forward"].num_layers
        kept = {
            "forward": self._check_kept(forward_kept_layers, "forward_kept_layers"),
            "backward": self._check_kept(backward_kept_layers, "backward_kept_layers"),
        }
        for direction in DIRECTIONS:
            lm = lms[direction]
            lm.drop_softmax()
            if kept[direction] != list(range(self.num_layers)):
                lm._encoder = lm.encoder.pruned(kept[direction])
            for parameter in lm.parameters():
                parameter.requires_grad = False
            lm.eval()
        self.forward_lm = lms["forward"]
        self.backward_lm = lms["backward"]
        self.forward_kept_layers = kept["forward"]
        self.backward_kept_layers = kept["backward"]

        initial = torch.zeros(2, self.num_layers)
        initial[0, kept["forward"]] = 1.0
        initial[1, kept["backward"]] = 1.0
        self.layer_mask = torch.nn.Parameter(initial, requires_grad=trainable_layer_mask)

        self._dropout = torch.nn.Dropout(dropout)
        self._lm_input_dropout = torch.nn.Dropout(lm_dropout)
        self.projection = torch.nn.Linear(self.lm_output_dim, projection_dim)
        self.output_dim = projection_dim

    # ------------------------------------------------------------------ public

    @property
    def lm_output_dim(self) -> int:
        """Dim of `[h_t ; h^r_t]`, the input of `W_cr` (after any pruning)."""
        return self.forward_lm.get_output_dim() + self.backward_lm.get_output_dim()

    def get_output_dim(self) -> int:
        return self.output_dim

    def set_layer_mask_trainable(self, trainable: bool) -> None:
        """Turns training of `layer_mask` on or off (for LD-Net's pruning phase)."""
        self.layer_mask.requires_grad_(trainable)

    def kept_layers(self) -> Dict[str, List[int]]:
        """Layers (indices into the loaded LMs) that this embedder runs, per direction."""
        return {
            "forward": list(self.forward_kept_layers),
            "backward": list(self.backward_kept_layers),
        }

    def train(self, mode: bool = True):
        super().train(mode)
        # The LMs are frozen feature extractors: never in training mode.
        self.forward_lm.eval()
        self.backward_lm.eval()
        return self

    def lm_features(
        self, tokens: torch.LongTensor, mask: Optional[torch.BoolTensor] = None
    ) -> torch.Tensor:
        """
        `[h_t ; h^r_t]`: the masked dense outputs of both LMs,
        `(batch_size, num_tokens, lm_output_dim)`, zero at padding.
        """
        if mask is None:
            mask = tokens != 0
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.layer_mask.requires_grad):
            forward = self._run_lm(self.forward_lm, tokens, mask, 0)
            backward = self._run_lm(self.backward_lm, tokens, mask, 1)
        return torch.cat([forward, backward], dim=-1)

    def forward(self, tokens: torch.LongTensor) -> torch.Tensor:  # type: ignore
        """
        tokens : `(batch_size, num_tokens)` ids in the LM vocabulary (0 = padding).

        Returns `r` : `(batch_size, num_tokens, projection_dim)`.
        """
        mask = tokens != 0
        features = self.lm_features(tokens, mask)
        return torch.relu(self.projection(self._dropout(features)))

    # ------------------------------------------------------------------ running the LMs

    def _run_lm(
        self, lm: DenseLanguageModel, tokens: torch.LongTensor, mask: torch.BoolTensor, row: int
    ) -> torch.Tensor:
        kept = self.forward_kept_layers if row == 0 else self.backward_kept_layers
        layer_mask = self.layer_mask[row, kept]
        if not (self.training and self.lm_dropout > 0.0):
            return lm.contextual_embeddings(
                tokens, mask, layer_mask, add_sentence_boundaries=self.add_sentence_boundaries
            )
        # LM input dropout: the LM's public API takes ids, so embed, drop out and run the
        # dense stack here (same steps as `DenseLanguageModel.contextual_layers`).
        if self.add_sentence_boundaries:
            tokens, mask = util.add_sentence_boundary_token_ids(
                tokens,
                mask,
                lm.vocab.get_token_index("<S>", "tokens"),
                lm.vocab.get_token_index("</S>", "tokens"),
            )
        embedded = self._lm_input_dropout(lm.embed_tokens(tokens))
        if lm.direction == "forward":
            dense = lm.encoder(embedded, mask, layer_mask)
        else:
            dense = run_backward(lm.encoder, embedded, mask, layer_mask)
        if self.add_sentence_boundaries:
            dense, _ = util.remove_sentence_boundaries(dense, mask)
        return dense

    # ------------------------------------------------------------------ construction helpers

    def _check_kept(self, kept: Optional[Sequence[int]], key: str) -> List[int]:
        if kept is None:
            return list(range(self.num_layers))
        # may be empty: an LM pruned of every layer contributes its token embeddings only
        kept = sorted(set(int(i) for i in kept))
        if kept and (kept[0] < 0 or kept[-1] >= self.num_layers):
            raise ConfigurationError(
                f"{key} {kept} out of range for LMs of {self.num_layers} layers."
            )
        return kept

    def _load_lm(
        self, direction: str, archive_path: str, vocab: Optional[Vocabulary]
    ) -> DenseLanguageModel:
        key = f"{direction}_lm_archive"
        if archive_path and os.path.exists(archive_path):
            try:
                archive = load_archive(archive_path)
            except Exception as error:  # not an archive at all
                raise ConfigurationError(
                    f"{key} ({archive_path}) could not be loaded as an AllenNLP model archive: "
                    f"{error}"
                ) from error
            lm = archive.model
            config = archive.config["model"].as_dict(quiet=True)
        else:
            stored = self._stored_config(direction, vocab)
            if stored is None:
                raise ConfigurationError(
                    f"{key} ({archive_path}) does not exist, and the vocabulary holds no stored "
                    "copy of this LM (a trained layer_selection tagger's archive has one)."
                )
            config = stored
            lm_vocab = Vocabulary(non_padded_namespaces=[])
            lm_vocab.add_tokens_to_namespace(
                [
                    token
                    for _, token in sorted(
                        vocab.get_index_to_token_vocabulary(self.vocab_namespace).items()
                    )
                ][2:],
                "tokens",
            )
            logger.info("Rebuilding the %s LM from the copy stored in the vocabulary", direction)
            lm = Model.from_params(vocab=lm_vocab, params=Params(dict(config)))
        if not isinstance(lm, DenseLanguageModel):
            raise ConfigurationError(
                f"{key} ({archive_path}) is not a dense language model: its model is "
                f"{type(lm).__name__} (type {config.get('type')!r}), expected "
                "'dense_language_model'."
            )
        if lm.direction != direction:
            raise ConfigurationError(
                f"{key} ({archive_path}) holds a {lm.direction!r} LM, expected {direction!r} "
                "(are forward_lm_archive and backward_lm_archive swapped?)."
            )
        lm._ldnet_config = config  # type: ignore[attr-defined]
        return lm

    def _stored_config(self, direction: str, vocab: Optional[Vocabulary]) -> Optional[Dict]:
        if vocab is None:
            return None
        if vocab.get_vocab_size(self.vocab_namespace) <= 2:
            return None
        namespace = lm_config_namespace(self.vocab_namespace)
        for token in vocab.get_token_to_index_vocabulary(namespace):
            if token.startswith("{"):
                config = json.loads(token)
                if config.get("direction", "forward") == direction:
                    return config
        return None

    @staticmethod
    def _lm_tokens(lm: DenseLanguageModel) -> List[str]:
        index_to_token = lm.vocab.get_index_to_token_vocabulary("tokens")
        return [index_to_token[i] for i in range(len(index_to_token))]

    def _check_same_vocabulary(
        self, lms: Dict[str, DenseLanguageModel], archives: Dict[str, str]
    ) -> None:
        forward, backward = (self._lm_tokens(lms[d]) for d in DIRECTIONS)
        if forward != backward:
            differing = next(
                (i for i, (a, b) in enumerate(zip(forward, backward)) if a != b),
                min(len(forward), len(backward)),
            )
            raise ConfigurationError(
                f"forward_lm_archive ({archives['forward']}) and backward_lm_archive "
                f"({archives['backward']}) have different vocabularies ({len(forward)} vs "
                f"{len(backward)} words, first difference at index {differing}); LD-Net's two "
                "LMs must share one word vocabulary."
            )

    def _store_in_vocabulary(self, vocab: Vocabulary, lms: Dict[str, DenseLanguageModel]) -> None:
        """Copies the LM vocabulary and configs into `vocab` (or checks an existing copy)."""
        tokens = self._lm_tokens(lms["forward"])
        if vocab.get_vocab_size(self.vocab_namespace) > 2:
            existing = vocab.get_index_to_token_vocabulary(self.vocab_namespace)
            if [existing[i] for i in range(len(existing))] != tokens:
                raise ConfigurationError(
                    f"The tagger vocabulary's namespace {self.vocab_namespace!r} does not match "
                    "the LM archives' vocabulary: forward_lm_archive / backward_lm_archive are "
                    "not the LMs this tagger was trained with."
                )
        else:
            if tokens[:2] != [vocab._padding_token, vocab._oov_token]:
                raise ConfigurationError(
                    "The LM vocabulary must start with the padding and OOV tokens "
                    f"({vocab._padding_token}, {vocab._oov_token}); got {tokens[:2]}."
                )
            vocab.add_tokens_to_namespace(tokens[2:], self.vocab_namespace)
        namespace = lm_config_namespace(self.vocab_namespace)
        if not any(t.startswith("{") for t in vocab.get_token_to_index_vocabulary(namespace)):
            for direction in DIRECTIONS:
                config = json.dumps(lms[direction]._ldnet_config, sort_keys=True)
                vocab.add_token_to_namespace(config, namespace)
