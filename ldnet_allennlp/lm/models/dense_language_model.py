"""
LD-Net's densely connected LSTM language model (Liu et al., 2018), one direction per model.
"""

import math
from typing import Dict, List, Optional, Sequence, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules.text_field_embedders import TextFieldEmbedder
from allennlp.modules.token_embedders import Embedding
from allennlp.nn import util

from ldnet_allennlp.modules import sentence_boundaries
from ldnet_allennlp.modules.dense_lstm import DenseLSTMStack, run_backward

DIRECTIONS = ("forward", "backward")


@Model.register("dense_language_model")
class DenseLanguageModel(Model):
    """
    A one-direction densely connected LSTM language model, as in LD-Net:

        tokens -> text_field_embedder -> dropout -> DenseLSTMStack -> [x; h_1; ...; h_L]
               -> ReLU(W_proj h + b) -> dropout -> adaptive softmax (AdaptiveLogSoftmaxWithLoss)

    The `"forward"` model predicts token t+1 from tokens 0..t; the `"backward"` model runs the
    stack over each sentence's tokens reversed and predicts token t-1 from tokens t..n-1.
    Every position whose target is a real token is predicted (with the `dense_lm_text` reader,
    sentences are `<S> w_1 ... w_n </S>`: the forward LM predicts `w_1 ... w_n </S>`, the
    backward one `<S> w_1 ... w_n`).

    Loss: mean token negative log-likelihood of the batch.  Metric `perplexity`:
    `exp(sum of token NLLs / number of predicted tokens)`, accumulated over all batches since
    the last reset (token-weighted, so `allennlp evaluate` reports the corpus perplexity).

    Under `"distributed"` training (DDP): `perplexity` sums the NLLs and token counts of every
    worker, so it is the value of one process on all the data; and the training loss includes
    `0 ·` every adaptive-softmax parameter, because a batch whose targets miss a tail cluster
    leaves that cluster unused, which DDP (`find_unused_parameters=false`) rejects with
    "Expected to have finished reduction in the prior iteration".

    Registered as `"dense_language_model"`.

    # Parameters

    text_field_embedder : `TextFieldEmbedder`
        The token embedding (one `embedding` of the `tokens` namespace, as the dense LM's vocabulary
        is a word vocabulary).
    encoder : `DenseLSTMStack`
        `{"input_size", "hidden_size", "num_layers", "dropout", "layer_dropout", "kept_layers"}`;
        `input_size` must equal the embedder's output dim.
    projection_dim : `int`
        Size of `ReLU(W_proj h + b)`.
    cutoffs : `List[int]`
        Adaptive-softmax cluster boundaries over vocabulary indices (AllenNLP's vocabulary is sorted
        by frequency), strictly increasing, each in (0, vocab_size).
    direction : `str`, optional (default = `"forward"`)
        `"forward"` or `"backward"`.
    dropout : `float`, optional (default = `0.1`)
        Dropout on the embeddings and on the projection, in [0, 1).
    div_value : `float`, optional (default = `4.0`)
        Adaptive-softmax tail size divisor.

    Public API used by `DenseBiLm` (`lm/modules/dense_bilm.py`; `lm/modules/lm_archives.py`
    loads the archives, and registers `"dense_language_model_from_archive"`):

    - `contextual_embeddings(tokens, mask=None, layer_mask=None, add_sentence_boundaries=False)`
      -> `(batch_size, num_tokens, get_output_dim())`, the dense output `[x; h_1..h_L]` in the
      original token order (for the backward model, position t has read tokens t..n-1).
    - `contextual_layers(...)` (same arguments) -> list `[x, h_1, ..., h_L]` of
      `(batch_size, num_tokens, dim)` tensors (x: embedding dim, h_l: hidden size).
    - `tokens` is either a `LongTensor (batch_size, num_tokens)` of ids in the `tokens`
      namespace of `self.vocab` (0 = padding) or a `TextFieldTensors` dict; `mask` defaults to
      `tokens != 0`; `layer_mask` `(num_layers,)` multiplies each layer (default: none masked) and
      receives gradients; `add_sentence_boundaries=True` wraps each sentence in `<S>`/`</S>`
      as in LM training and strips them from the result.
    - `embed_tokens(token_ids)`: `(batch_size, num_tokens)` ids -> the LM's word embeddings
      `(batch_size, num_tokens, embedding_dim)` (what the stack reads); `dense_layers(embedded,
      mask, layer_mask=None)` runs the stack on them and returns `[x, h_1, ..., h_L]`.
    - `get_output_dim()`, `num_layers`, `direction`, `encoder` (the `DenseLSTMStack`),
      `embedding_dim`, `hidden_size`.
    - `drop_softmax()`: removes the adaptive softmax (and the
      projection) for use as a frozen feature extractor; `forward` then returns no loss.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: DenseLSTMStack,
        projection_dim: int,
        cutoffs: Sequence[int],
        direction: str = "forward",
        dropout: float = 0.1,
        div_value: float = 4.0,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        if direction not in DIRECTIONS:
            raise ConfigurationError(
                f"direction must be 'forward' or 'backward', got {direction!r}."
            )
        if text_field_embedder.get_output_dim() != encoder.get_input_dim():
            raise ConfigurationError(
                f"encoder.input_size ({encoder.get_input_dim()}) must equal the output dim of "
                f"text_field_embedder ({text_field_embedder.get_output_dim()})."
            )
        if not 0.0 <= dropout < 1.0:
            raise ConfigurationError(f"dropout must be in [0, 1), got {dropout}.")
        if projection_dim < 1:
            raise ConfigurationError(f"projection_dim must be >= 1, got {projection_dim}.")
        vocab_size = vocab.get_vocab_size("tokens")
        cutoffs = [int(c) for c in cutoffs]
        if not cutoffs:
            raise ConfigurationError("cutoffs must list at least one cluster boundary.")
        if any(b <= a for a, b in zip(cutoffs, cutoffs[1:])):
            raise ConfigurationError(f"cutoffs must be strictly increasing, got {cutoffs}.")
        if cutoffs[0] <= 0 or cutoffs[-1] >= vocab_size:
            raise ConfigurationError(
                f"cutoffs {cutoffs} must lie strictly between 0 and the vocabulary size "
                f"({vocab_size} in namespace 'tokens'); lower them or enlarge the vocabulary."
            )
        smallest_tail = int(projection_dim // (div_value ** len(cutoffs)))
        if smallest_tail < 1:
            raise ConfigurationError(
                f"projection_dim ({projection_dim}) / div_value ({div_value}) ** len(cutoffs) "
                f"({len(cutoffs)}) must be >= 1: the last adaptive-softmax cluster would have "
                "no dimensions. Raise projection_dim, lower div_value or use fewer cutoffs."
            )
        self.direction = direction
        self.cutoffs = cutoffs
        self._text_field_embedder = text_field_embedder
        self._encoder = encoder
        self._dropout = torch.nn.Dropout(dropout)
        self._projection: Optional[torch.nn.Linear] = torch.nn.Linear(
            encoder.get_output_dim(), projection_dim
        )
        self._softmax: Optional[torch.nn.AdaptiveLogSoftmaxWithLoss] = (
            torch.nn.AdaptiveLogSoftmaxWithLoss(
                projection_dim, vocab_size, cutoffs, div_value=div_value
            )
        )
        self._nll_sum = 0.0
        self._num_predicted = 0

    # ---------------------------------------------------------------- public feature API

    @property
    def encoder(self) -> DenseLSTMStack:
        return self._encoder

    @property
    def num_layers(self) -> int:
        return self._encoder.num_layers

    @property
    def embedding_dim(self) -> int:
        return self._encoder.input_size

    @property
    def hidden_size(self) -> int:
        return self._encoder.hidden_size

    def get_output_dim(self) -> int:
        """Dim of `contextual_embeddings`: embedding dim + num_layers * hidden size."""
        return self._encoder.get_output_dim()

    def keep_layers(self, kept: Sequence[int]) -> None:
        """Cuts the stack down to the layers `kept` (`DenseLSTMStack.pruned`)."""
        self._encoder = self._encoder.pruned(kept)

    def drop_softmax(self) -> None:
        """
        Removes the LM head (projection and adaptive softmax): a feature extractor only, indexed
        by the LM's own vocabulary. So its word embedding must never be resized to a task
        vocabulary: `Model.extend_embedder_vocab` (run by `load_archive` on the task model that
        holds this LM) extends every nested `Embedding` by its `_vocab_namespace` in the *task*
        vocabulary (e.g. the tagger's `tokens`); without a namespace, `extend_vocab` does nothing.
        """
        self._softmax = None
        self._projection = None
        for module in self._text_field_embedder.modules():
            if isinstance(module, Embedding):
                module._vocab_namespace = None

    def contextual_layers(
        self,
        tokens: Union[torch.LongTensor, TextFieldTensors],
        mask: Optional[torch.BoolTensor] = None,
        layer_mask: Optional[torch.Tensor] = None,
        add_sentence_boundaries: bool = False,
    ) -> List[torch.Tensor]:
        """`[x, h_1, ..., h_L]`, each `(batch_size, num_tokens, dim)`; see the class docstring."""
        token_ids, mask = self._token_ids_and_mask(tokens, mask)
        if not add_sentence_boundaries:
            return self.dense_layers(self.embed_tokens(token_ids), mask, layer_mask)
        with_boundaries = sentence_boundaries.add_sentence_boundaries(
            token_ids * mask,
            self.vocab.get_token_index("<S>", "tokens"),
            self.vocab.get_token_index("</S>", "tokens"),
        )
        embedded = self.embed_tokens(with_boundaries)
        layers = self.dense_layers(embedded, with_boundaries != 0, layer_mask)
        return [sentence_boundaries.remove_sentence_boundaries(layer, mask) for layer in layers]

    def contextual_embeddings(
        self,
        tokens: Union[torch.LongTensor, TextFieldTensors],
        mask: Optional[torch.BoolTensor] = None,
        layer_mask: Optional[torch.Tensor] = None,
        add_sentence_boundaries: bool = False,
    ) -> torch.Tensor:
        """The dense output `(batch_size, num_tokens, get_output_dim())`; see the class doc."""
        return torch.cat(
            self.contextual_layers(tokens, mask, layer_mask, add_sentence_boundaries), dim=-1
        )

    # ---------------------------------------------------------------- training

    def forward(self, source: TextFieldTensors) -> Dict[str, torch.Tensor]:  # type: ignore
        """
        # Parameters

        source : `TextFieldTensors`, `(batch_size, num_tokens)`
            `<S> w_1 ... w_n </S>` sentences.

        # Returns

        `loss` (mean token NLL, scalar), `num_targets` (number of predicted tokens),
        `mask` and `lm_embeddings` (`(batch_size, num_tokens, get_output_dim())`); without a
        softmax (after `drop_softmax()`), only `mask` and `lm_embeddings`.
        """
        token_ids, mask = self._token_ids_and_mask(source, None)
        embedded = self._dropout(self.embed_tokens(token_ids))
        dense = self._run_encoder(embedded, mask, None, all_layers=False)
        output = {"mask": mask, "lm_embeddings": dense}
        if self._softmax is None:
            return output

        targets, target_mask = self._targets(token_ids, mask)
        projected = self._dropout(torch.relu(self._projection(dense)))
        selected = projected[target_mask]  # (num_targets, projection_dim)
        num_targets = selected.size(0)
        if num_targets == 0:
            output["loss"] = projected.sum() * 0.0 + self._unused_softmax_term()
            output["num_targets"] = 0
            return output
        log_probs = self._softmax(selected, targets[target_mask]).output  # (num_targets,)
        nll_sum = -log_probs.sum()
        output["loss"] = nll_sum / num_targets + self._unused_softmax_term()
        output["num_targets"] = num_targets
        self._nll_sum += float(nll_sum.detach())
        self._num_predicted += num_targets
        return output

    def _unused_softmax_term(self) -> Union[torch.Tensor, float]:
        """
        Under DDP training, `0 ·` the sum of every adaptive-softmax parameter (a zero that makes
        every tail cluster take part in the loss, see the class docstring); 0.0 otherwise, so
        that single-process training is unchanged.
        """
        if not (self.training and util.is_distributed()):
            return 0.0
        return 0.0 * sum(parameter.sum() for parameter in self._softmax.parameters())

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        """
        `perplexity` = exp(mean NLL over every token predicted since the last reset), over the
        tokens of every worker under DDP.
        """
        nll_sum, num_predicted = self._nll_sum, self._num_predicted
        if util.is_distributed():
            totals = util.dist_reduce_sum(
                torch.tensor([nll_sum, float(num_predicted)], dtype=torch.float64)
            )
            nll_sum, num_predicted = float(totals[0]), int(totals[1])
        if num_predicted == 0:
            perplexity = 0.0
        else:
            perplexity = math.exp(min(nll_sum / num_predicted, 50.0))
        if reset:
            self._nll_sum = 0.0
            self._num_predicted = 0
        return {"perplexity": perplexity}

    # ---------------------------------------------------------------- helpers

    def _token_ids_and_mask(self, tokens, mask):
        if isinstance(tokens, dict):
            token_ids = util.get_token_ids_from_text_field_tensors(tokens)
            if mask is None:
                mask = util.get_text_field_mask(tokens)
        else:
            token_ids = tokens
            if mask is None:
                mask = token_ids != 0
        return token_ids, mask

    def token_embedder(self) -> torch.nn.Module:
        """The one token embedder of the LM's text field embedder (its word embedding)."""
        embedders = self._text_field_embedder._token_embedders  # type: ignore
        if len(embedders) != 1:
            raise ConfigurationError(
                "text_field_embedder of a dense_language_model must have exactly one token "
                f"embedder, got {sorted(embedders)}."
            )
        (embedder,) = embedders.values()
        return embedder

    def embed_tokens(self, token_ids: torch.LongTensor) -> torch.Tensor:
        """`(batch_size, num_tokens)` ids -> `(batch_size, num_tokens, embedding_dim)`."""
        self.token_embedder()  # exactly one
        (name,) = self._text_field_embedder._token_embedders  # type: ignore
        return self._text_field_embedder({name: {"tokens": token_ids}})

    def dense_layers(
        self,
        embedded: torch.Tensor,
        mask: torch.BoolTensor,
        layer_mask: Optional[torch.Tensor] = None,
    ) -> List[torch.Tensor]:
        """
        The stack's pieces `[x, h_1, ..., h_L]` for already embedded tokens
        `(batch_size, num_tokens, embedding_dim)`, in the original token order.
        """
        return self._run_encoder(embedded, mask, layer_mask, all_layers=True)

    def _run_encoder(self, embedded, mask, layer_mask, all_layers: bool):
        if self.direction == "forward":
            if all_layers:
                return self._encoder.forward_layers(embedded, mask, layer_mask)
            return self._encoder(embedded, mask, layer_mask)
        return run_backward(self._encoder, embedded, mask, layer_mask, return_all_layers=all_layers)

    def _targets(self, token_ids: torch.LongTensor, mask: torch.BoolTensor):
        """Forward: position t predicts token t+1; backward: position t predicts token t-1."""
        targets = torch.zeros_like(token_ids)
        target_mask = torch.zeros_like(mask)
        if self.direction == "forward":
            targets[:, :-1] = token_ids[:, 1:]
            target_mask[:, :-1] = mask[:, 1:]
        else:
            targets[:, 1:] = token_ids[:, :-1]
            target_mask[:, 1:] = mask[:, 1:] & mask[:, :-1]
        return targets, target_mask
