"""
`EmissionNetwork`: a CRF tagger's network, from indexed tokens to the CRF's emissions (logits),
rewritten with operations that trace into one ONNX graph whose batch size, sentence length and
word length are all dynamic. What `allennlp ldnet-export` exports.

The tagger computes the same things with code that does not trace: its LSTMs
(`PytorchSeq2SeqWrapper`, `DenseLSTMStack`) run on packed sequences, whose lengths a trace would
freeze. Here:

- sentence boundaries are put in and taken out as the dense biLM does it
  (`modules/sentence_boundaries.py`, with `where` and slicing);
- every LSTM runs unpacked, left to right over the padded batch (the dense LMs through
  `DenseLSTMStack.forward_layers_unpacked`, the stack's own traceable form): a real position
  never reads a later one, so its outputs are the packed LSTM's (up to float rounding); a
  right-to-left LSTM (the backward LM, the word BiLSTM's reverse half) reads each sentence's
  real positions reversed in place (`reverse_within_lengths`, as `dense_lstm.run_backward`
  does), so padding never comes before a real position;
- outputs at padding positions are zeroed as the originals zero them.

The parts, each built from the trained module's own weights (`EmissionNetwork.from_tagger`):
`embedding` token embedders, `character_encoding` with a `cnn` encoder, `layer_selection`
(LD-Net's `r_t` over the kept LM layers, with their fixed layer masks), `dense_lm_scalar_mix`
(the first mix over the kept LM layers, its masked weights and `γ` fixed, optional layer norm
and projection), and `glove_embedding`,
whose 400,000 x 50 matrix stays out of the graph: its input is the looked-up vectors (the
runtime reads them from the installed GloVe package). Then the text field embedder's
concatenation (in sorted key order), the encoder (an `lstm`, any number of layers, either
direction), an optional feedforward, and the tag projection. Anything else is a
`ConfigurationError` naming it.

With word tables (`EmissionNetwork.from_tagger(model, word_tables=True)`), everything that
depends on the word alone is taken out of the graph: an `embedding`'s rows, a
`character_encoding`'s CNN output and the LMs' input embeddings (`layer_selection`,
`dense_lm_scalar_mix`) are graph inputs, `(batch, num_tokens, dim)` float32 vectors, which the
exporter computes once per word of the vocabularies (`word_parts`: the per-word network of each
such input) and the runtime looks up; the LMs' sentence boundaries are then put in around the
vectors inside the graph (`with_boundary_vectors`).

Embedding tables whose values are all exactly representable in float16 (those of archives
written with `ldnet-prune --fp16`, and the shipped LMs) are stored in float16 and cast after the
lookup: the same float32 values, half the file.
"""

from typing import Dict, List, Optional, Tuple

import torch
from torch.nn import functional
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import PytorchSeq2SeqWrapper
from allennlp.modules.seq2vec_encoders import CnnEncoder
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import Embedding, TokenCharactersEncoder
from allennlp.nn.util import min_value_of_dtype

from ldnet_allennlp.glove.token_embedder import GloveTokenEmbedder
from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel
from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm
from ldnet_allennlp.lm.token_embedders.layer_selection import LayerSelectionTokenEmbedder
from ldnet_allennlp.lm.token_embedders.scalar_mix import DenseLMScalarMixEmbedder, masked_layer_norm
from ldnet_allennlp.modules.sentence_boundaries import (
    add_sentence_boundaries,
    remove_sentence_boundaries,
)
from ldnet_runtime.export_format import MASK_INPUT

SUPPORTED_EMBEDDERS = (
    "embedding, character_encoding with a cnn encoder, layer_selection, dense_lm_scalar_mix and "
    "glove_embedding"
)


class _ReverseSequence(torch.autograd.Function):
    """`reverse_within_lengths`, traced as one ONNX `ReverseSequence` node."""

    @staticmethod
    def forward(ctx, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:  # type: ignore
        positions = torch.arange(inputs.size(1), device=inputs.device).unsqueeze(0)
        lengths = lengths.unsqueeze(1)
        index = torch.where(positions < lengths, lengths - 1 - positions, positions)
        return inputs.gather(1, index.unsqueeze(2).expand_as(inputs))

    @staticmethod
    def symbolic(g, inputs, lengths):  # type: ignore
        return g.op("ReverseSequence", inputs, lengths, batch_axis_i=0, time_axis_i=1)


def reverse_within_lengths(inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """
    `inputs` `(batch, num_tokens, dim)` with each row's first `lengths[b]` positions reversed
    and the padding left where it is (`dense_lstm.reverse_padded_sequence`); its own inverse.
    `lengths`: `(batch,)` int64. One `ReverseSequence` node in the graph.
    """
    return _ReverseSequence.apply(inputs, lengths.long())


def with_boundary_vectors(
    vectors: torch.Tensor, mask: torch.Tensor, bos: torch.Tensor, eos: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """
    `add_sentence_boundaries` on looked-up vectors: `vectors` `(batch, num_tokens, dim)` with
    `bos` `(dim,)` put before each sentence and `eos` after it, `(batch, num_tokens + 2, dim)`,
    and its mask `(batch, num_tokens + 2)`. `mask`: `(batch, num_tokens)`, left-aligned.
    """
    lengths = mask.sum(dim=1, keepdim=True)
    positions = torch.arange(vectors.size(1) + 2, device=vectors.device).unsqueeze(0)
    padded = functional.pad(vectors, (0, 0, 1, 1))
    bounded = torch.where(
        (positions == 0).unsqueeze(-1),
        bos,
        torch.where((positions == lengths + 1).unsqueeze(-1), eos, padded),
    )
    return bounded, positions < lengths + 2


class _Table(torch.nn.Module):
    """
    An AllenNLP `Embedding` (its table and optional projection): ids `(...)` -> vectors
    `(..., dim)`. The table is kept in float16 when that loses nothing.
    """

    def __init__(self, embedding: Embedding, where: str) -> None:
        super().__init__()
        if not isinstance(embedding, Embedding):
            raise ConfigurationError(
                f"{where} is a {type(embedding).__name__}; ldnet-export exports AllenNLP "
                "`embedding` tables only."
            )
        if embedding.max_norm is not None:
            raise ConfigurationError(
                f"{where} has max_norm {embedding.max_norm}: an embedding that renormalises its "
                "rows on lookup cannot be exported."
            )
        weight = embedding.weight.detach().float()
        half = weight.half()
        if torch.equal(half.float(), weight):
            weight = half
        self.register_buffer("weight", weight.clone())
        self.projection = embedding._projection

    def forward(self, ids: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        embedded = functional.embedding(ids, self.weight).float()
        if self.projection is not None:
            embedded = self.projection(embedded)
        return embedded


class _CharacterCnn(torch.nn.Module):
    """
    `character_encoding` with a `cnn` encoder: character ids `(batch, num_tokens, num_chars)`
    -> `(batch, num_tokens, output_dim)`, AllenNLP's `CnnEncoder` step by step (characters
    zeroed at padding, convolutions, activation, positions reaching into padding pushed to the
    dtype's minimum before the max, maxima still at that minimum set to 0, projection).
    """

    def __init__(self, encoder: TokenCharactersEncoder, where: str) -> None:
        super().__init__()
        cnn = encoder._encoder._module
        if not isinstance(cnn, CnnEncoder):
            raise ConfigurationError(
                f"{where}: a character_encoding with a {type(cnn).__name__} encoder; "
                "ldnet-export exports the `cnn` encoder only."
            )
        self.embedding = _Table(encoder._embedding._module, f"{where}.embedding")
        self.convolutions = torch.nn.ModuleList(cnn._convolution_layers)
        self.activation = cnn._activation
        self.projection = cnn.projection_layer

    def forward(
        self, characters: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        batch, num_tokens, num_chars = characters.size(0), characters.size(1), characters.size(2)
        characters = characters.reshape(-1, num_chars)  # TimeDistributed
        mask = (characters != 0).long()
        embedded = self.embedding(characters) * mask.unsqueeze(-1)
        embedded = embedded.transpose(1, 2)
        last_unmasked = mask.sum(dim=1).unsqueeze(-1)
        minimum = min_value_of_dtype(embedded.dtype)
        pooled = []
        for convolution in self.convolutions:
            activations = self.activation(convolution(embedded))
            positions = torch.arange(activations.size(2), device=activations.device).unsqueeze(0)
            masked = positions.ge(last_unmasked - convolution.kernel_size[0] + 1).unsqueeze(1)
            activations = activations + (masked * minimum)
            pooled.append(activations.max(dim=2)[0])
        output = torch.cat(pooled, dim=1) if len(pooled) > 1 else pooled[0]
        output = torch.where(output == minimum, torch.zeros_like(output), output)
        if self.projection is not None:
            output = self.projection(output)
        return output.reshape(batch, num_tokens, -1)


class _DenseLm(torch.nn.Module):
    """
    One direction of a `DenseBiLm` (after any pruning): ids `(batch, num_tokens)` and their
    mask -> the layers `[x, z_0 h_0, ...]`, each `(batch, num_tokens, dim)`, zero at padding, in
    the original token order.
    """

    def __init__(self, lm: DenseLanguageModel, layer_mask: torch.Tensor, where: str) -> None:
        super().__init__()
        self.embedding = _Table(lm.token_embedder(), f"{where}'s word embedding")
        self.stack = lm.encoder
        self.register_buffer("layer_mask", layer_mask.detach().float().clone())
        self.backward = lm.direction == "backward"

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> List[torch.Tensor]:
        return self.layers(self.embedding(ids), mask)

    def layers(self, inputs: torch.Tensor, mask: torch.Tensor) -> List[torch.Tensor]:
        """The layers from the input embeddings `(batch, num_tokens, dim)` and their mask."""
        if not self.backward:
            return self.stack.forward_layers_unpacked(inputs, mask, self.layer_mask)
        lengths = mask.sum(dim=1)
        reversed_inputs = reverse_within_lengths(inputs, lengths)
        layers = self.stack.forward_layers_unpacked(reversed_inputs, mask, self.layer_mask)
        # the first layer is the inputs (zero at padding): no need to reverse them back
        first = inputs * mask.unsqueeze(-1).to(inputs.dtype)
        return [first] + [reverse_within_lengths(layer, lengths) for layer in layers[1:]]


class _BiLmLayers(torch.nn.Module):
    """
    A `DenseBiLm` (after any pruning, its fixed layer masks applied): LM ids
    `(batch, num_tokens)` -> per direction the layers `[x, z h for each kept layer]`, each
    `(batch, num_tokens', dim)` and zero at padding, and their mask `(batch, num_tokens')`, where
    `num_tokens' = num_tokens + 2` with the biLM's sentence boundaries, else `num_tokens`.
    """

    def __init__(self, bilm: DenseBiLm, where: str, from_vectors: bool = False) -> None:
        super().__init__()
        layer_masks = bilm.kept_layer_masks()
        self.forward_lm = _DenseLm(bilm.forward_lm, layer_masks["forward"], f"{where}'s forward LM")
        self.backward_lm = _DenseLm(
            bilm.backward_lm, layer_masks["backward"], f"{where}'s backward LM"
        )
        self.add_sentence_boundaries = bilm.add_sentence_boundaries
        self.bos = int(bilm.bos_index)
        self.eos = int(bilm.eos_index)
        self.from_vectors = from_vectors
        self.forward_dim = self.forward_lm.embedding.weight.size(1)
        with torch.no_grad():
            boundaries = _WordVectors(self)(torch.tensor([self.bos, self.eos]))
        self.register_buffer("bos_vector", boundaries[0].clone())
        self.register_buffer("eos_vector", boundaries[1].clone())

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[List[torch.Tensor], List[torch.Tensor], torch.Tensor]:
        """
        `inputs`: LM ids `(batch, num_tokens)`, or with `from_vectors` their vectors
        (`_WordVectors`, `(batch, num_tokens, dim)`); `mask`: `(batch, num_tokens)`.
        """
        if not self.from_vectors:
            ids = inputs
            if self.add_sentence_boundaries:
                ids = add_sentence_boundaries(ids, self.bos, self.eos)
            lm_mask = ids != 0
            return self.forward_lm(ids, lm_mask), self.backward_lm(ids, lm_mask), lm_mask
        vectors, lm_mask = inputs, mask
        if self.add_sentence_boundaries:
            vectors, lm_mask = with_boundary_vectors(
                vectors, mask, self.bos_vector, self.eos_vector
            )
        forward_inputs = vectors[..., : self.forward_dim]
        backward_inputs = vectors[..., self.forward_dim :]
        return (
            self.forward_lm.layers(forward_inputs, lm_mask),
            self.backward_lm.layers(backward_inputs, lm_mask),
            lm_mask,
        )

    def without_boundaries(self, tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`(batch, num_tokens', dim)` -> `(batch, num_tokens, dim)`, zero at padding."""
        if self.add_sentence_boundaries:
            return remove_sentence_boundaries(tensor, mask)
        return tensor * mask.unsqueeze(-1).to(tensor.dtype)


class _LayerSelection(torch.nn.Module):
    """
    `layer_selection`: LM ids `(batch, num_tokens)` -> `r_t = ReLU(W_cr [h_t; h^r_t] + b_cr)`,
    `(batch, num_tokens, projection_dim)`, with `DenseBiLm`'s sentence boundaries.
    """

    def __init__(
        self, embedder: LayerSelectionTokenEmbedder, where: str, from_vectors: bool = False
    ) -> None:
        super().__init__()
        self.bilm = _BiLmLayers(embedder.bilm, where, from_vectors)
        self.projection = embedder.projection

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        forward_layers, backward_layers, _ = self.bilm(inputs, mask)
        pieces = [self.bilm.without_boundaries(p, mask) for p in forward_layers + backward_layers]
        return torch.relu(self.projection(torch.cat(pieces, dim=-1)))


class _ScalarMix(torch.nn.Module):
    """
    `dense_lm_scalar_mix`: LM ids `(batch, num_tokens)` -> its first representation,
    `(batch, num_tokens, output_dim)`: `γ · [Σ_j w_fj h_j_fwd ; Σ_j w_bj h_j_bwd]` over the layers
    the LMs keep (`LayerMaskedScalarMix`, with the weights `γ · w` fixed at export), each layer
    layer-normalised first with `do_layer_norm`, sentence boundaries removed (dropout is off at
    inference), then the optional projection.
    """

    def __init__(
        self, embedder: DenseLMScalarMixEmbedder, where: str, from_vectors: bool = False
    ) -> None:
        super().__init__()
        bilm: DenseBiLm = embedder.bilm
        self.bilm = _BiLmLayers(bilm, where, from_vectors)
        if not self.bilm.add_sentence_boundaries:  # Elmo removes two positions whatever
            raise ConfigurationError(f"{where}: a scalar mix without sentence boundaries.")
        mix = embedder.scalar_mixes[0]
        with torch.no_grad():
            weights = (mix.gamma * mix.layer_weights()).detach().float()
        self.register_buffer("weights", weights.clone())  # (2, num_lm_layers + 1)
        self.kept = {d: list(bilm.kept_layers[d]) for d in ("forward", "backward")}
        self.mixed = [0] + [
            layer + 1
            for layer in range(bilm.num_lm_layers)
            if layer in self.kept["forward"] or layer in self.kept["backward"]
        ]
        widths = bilm.layer_widths()
        self.widths = [widths["forward"], widths["backward"]]
        self.do_layer_norm = bool(mix.do_layer_norm)
        self.projection = embedder.projection

    def _layer(self, layers: List[torch.Tensor], direction: str, index: int) -> torch.Tensor:
        """Layer `index` (0 = tokens) of one direction, padded to its half's width."""
        row = 0 if direction == "forward" else 1
        if index == 0:
            layer = layers[0]
        elif index - 1 in self.kept[direction]:
            layer = layers[1 + self.kept[direction].index(index - 1)]
        else:
            layer = layers[0][..., :0]
        return functional.pad(layer, (0, self.widths[row] - layer.size(-1)))

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        forward_layers, backward_layers, lm_mask = self.bilm(inputs, mask)
        mixed: Optional[torch.Tensor] = None
        for index in self.mixed:
            layer = torch.cat(
                [
                    self._layer(forward_layers, "forward", index),
                    self._layer(backward_layers, "backward", index),
                ],
                dim=-1,
            )
            if self.do_layer_norm:
                elements = lm_mask.sum() * layer.size(-1)
                layer = masked_layer_norm(layer, lm_mask.unsqueeze(-1), elements)
            weight = torch.cat(
                [
                    self.weights[0, index].expand(self.widths[0]),
                    self.weights[1, index].expand(self.widths[1]),
                ]
            )
            mixed = weight * layer if mixed is None else mixed + weight * layer
        assert mixed is not None
        representation = self.bilm.without_boundaries(mixed, mask)
        if self.projection is not None:
            representation = self.projection(representation)
        return representation


class _Vectors(torch.nn.Module):
    """An input that is the looked-up vectors themselves (`glove_embedding`, and with word
    tables `embedding` and `character_encoding`)."""

    def forward(self, vectors: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        return vectors


class _Lstm(torch.nn.Module):
    """
    A `PytorchSeq2SeqWrapper` over `torch.nn.LSTM` (the `lstm` encoder): `(batch, num_tokens,
    input_dim)` and the mask -> `(batch, num_tokens, output_dim)`, zero at padding; each layer
    and direction one single-layer LSTM with the trained weights.
    """

    def __init__(self, wrapper: PytorchSeq2SeqWrapper, where: str) -> None:
        super().__init__()
        lstm = wrapper._module
        if type(lstm) is not torch.nn.LSTM or wrapper.stateful:
            raise ConfigurationError(
                f"{where} is a {type(wrapper).__name__} over {type(lstm).__name__}"
                f"{' (stateful)' if wrapper.stateful else ''}; ldnet-export exports the `lstm` "
                "encoder (torch.nn.LSTM, not stateful) only."
            )
        if lstm.proj_size:
            raise ConfigurationError(f"{where}: an LSTM with proj_size cannot be exported.")
        directions = ["", "_reverse"] if lstm.bidirectional else [""]
        self.layers = torch.nn.ModuleList()
        for layer in range(lstm.num_layers):
            weight_ih = getattr(lstm, f"weight_ih_l{layer}")
            single = torch.nn.LSTM(
                weight_ih.size(1),
                lstm.hidden_size,
                bias=lstm.bias,
                batch_first=True,
                bidirectional=lstm.bidirectional,
            )
            with torch.no_grad():
                for suffix in directions:
                    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                        if hasattr(single, f"{kind}_l0{suffix}"):
                            getattr(single, f"{kind}_l0{suffix}").copy_(
                                getattr(lstm, f"{kind}_l{layer}{suffix}")
                            )
            self.layers.append(single)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # Packed: traced, each layer is one ONNX LSTM node (both directions) with the
        # sentences' lengths as its `sequence_lens`, which runs each right-to-left half from
        # the sentence's last token and leaves zeros at padding. The graph does not sort the
        # sentences by length (onnxruntime's LSTM needs no order); torch does.
        lengths = mask.sum(dim=1).cpu()
        traced = torch.onnx.is_in_onnx_export()
        output = inputs
        for lstm in self.layers:
            packed = pack_padded_sequence(output, lengths, batch_first=True, enforce_sorted=traced)
            output = pad_packed_sequence(
                lstm(packed)[0], batch_first=True, total_length=inputs.size(1)
            )[0]
        return output


class EmissionNetwork(torch.nn.Module):
    """
    A CRF tagger's emissions from its indexed inputs, traceable (see the module docstring).

    `forward(mask, *inputs)`: `mask` `(batch, num_tokens)` bool, then one tensor per token
    embedder in `self.input_keys` order (the text field embedder's sorted keys): ids
    `(batch, num_tokens)` int64 for `embedding`, `layer_selection` and `dense_lm_scalar_mix`,
    character ids
    `(batch, num_tokens, num_chars)` int64 for `character_encoding`, vectors
    `(batch, num_tokens, dim)` float32 for `glove_embedding`. Returns the logits
    `(batch, num_tokens, num_tags)`.

    `input_kinds`: per key, the embedder kind (`embedding`, `character_encoding`,
    `layer_selection`, `dense_lm_scalar_mix`, `glove_embedding`), which says what the key's
    input is.

    `word_parts` (with word tables): per key whose input is a word table's vectors, the
    per-word network that computes them from the embedder's own input (ids, or character ids
    `(batch, num_tokens, num_chars)` for `character_encoding`).
    """

    def __init__(
        self,
        parts: Dict[str, torch.nn.Module],
        input_kinds: Dict[str, str],
        encoder: torch.nn.Module,
        feedforward: Optional[torch.nn.Module],
        projection: torch.nn.Linear,
        word_parts: Optional[Dict[str, torch.nn.Module]] = None,
    ) -> None:
        super().__init__()
        self.input_keys = sorted(parts)
        self.input_kinds = input_kinds
        self.parts = torch.nn.ModuleDict(parts)
        self.word_parts = torch.nn.ModuleDict(word_parts or {})
        self.encoder = encoder
        self.feedforward = feedforward
        self.projection = projection
        self.eval()

    @classmethod
    def from_tagger(cls, model: torch.nn.Module, word_tables: bool = False) -> "EmissionNetwork":
        """
        The network of a loaded allennlp-models `CrfTagger` (so also `ldnet_crf_tagger`); with
        `word_tables`, from the word tables' vectors (the module docstring).
        """
        embedder = model.text_field_embedder
        if not isinstance(embedder, BasicTextFieldEmbedder):
            raise ConfigurationError(
                f"the text field embedder is a {type(embedder).__name__}; ldnet-export exports "
                "a `basic` text field embedder only."
            )
        parts: Dict[str, torch.nn.Module] = {}
        kinds: Dict[str, str] = {}
        for key in embedder._ordered_embedder_keys:
            if key == MASK_INPUT:
                raise ConfigurationError(
                    f"a token embedder named {MASK_INPUT!r} would clash with the graph's mask "
                    "input; rename it in the config to export this tagger."
                )
            token_embedder = getattr(embedder, f"token_embedder_{key}")
            where = f"text_field_embedder.{key}"
            if isinstance(token_embedder, GloveTokenEmbedder):
                parts[key], kinds[key] = _Vectors(), "glove_embedding"
            elif isinstance(token_embedder, LayerSelectionTokenEmbedder):
                parts[key] = _LayerSelection(token_embedder, where, word_tables)
                kinds[key] = "layer_selection"
            elif isinstance(token_embedder, DenseLMScalarMixEmbedder):
                parts[key] = _ScalarMix(token_embedder, where, word_tables)
                kinds[key] = "dense_lm_scalar_mix"
            elif isinstance(token_embedder, TokenCharactersEncoder):
                parts[key] = _CharacterCnn(token_embedder, where)
                kinds[key] = "character_encoding"
            elif type(token_embedder) is Embedding:
                parts[key], kinds[key] = _Table(token_embedder, where), "embedding"
            else:
                raise ConfigurationError(
                    f"{where} is a {type(token_embedder).__name__}: ldnet-export exports "
                    f"{SUPPORTED_EMBEDDERS} token embedders."
                )
        encoder = model.encoder
        if not isinstance(encoder, PytorchSeq2SeqWrapper):
            raise ConfigurationError(
                f"the encoder is a {type(encoder).__name__}; ldnet-export exports the `lstm` "
                "encoder only."
            )
        word_parts: Dict[str, torch.nn.Module] = {}
        if word_tables:
            for key, kind in kinds.items():
                if kind in ("embedding", "character_encoding"):
                    word_parts[key], parts[key] = parts[key], _Vectors()
                elif kind in ("layer_selection", "dense_lm_scalar_mix"):
                    word_parts[key] = _WordVectors(parts[key].bilm)
        return cls(
            parts,
            kinds,
            _Lstm(encoder, "encoder"),
            model._feedforward,
            model.tag_projection_layer._module,
            word_parts,
        )

    @property
    def input_names(self) -> List[str]:
        return [MASK_INPUT] + self.input_keys

    def forward(self, mask: torch.Tensor, *inputs: torch.Tensor) -> torch.Tensor:  # type: ignore
        embedded = torch.cat(
            [self.parts[key](tensor, mask) for key, tensor in zip(self.input_keys, inputs)], dim=-1
        )
        encoded = self.encoder(embedded, mask)
        if self.feedforward is not None:
            encoded = self.feedforward(encoded)
        return self.projection(encoded)

    def example_inputs(self, num_chars: int, glove_dim: Dict[str, int]) -> Tuple[torch.Tensor, ...]:
        """
        A batch of two sentences (4 and 2 tokens) of valid inputs, to trace the graph with;
        `num_chars` the word length, `glove_dim` the vector width of each `glove_embedding` key.
        """
        mask = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
        tensors = [mask]
        for key in self.input_keys:
            kind = self.input_kinds[key]
            if key in self.word_parts:
                (word_input,) = self.word_part_example(key, num_chars)[1:]
                with torch.no_grad():
                    vectors = self.word_parts[key](word_input)  # (1, 2, dim)
                dim = vectors.size(-1)
                tensors.append(mask.float().unsqueeze(-1).expand(2, 4, dim) * vectors[0, 0])
            elif kind == "character_encoding":
                tensors.append(mask.long().unsqueeze(-1).expand(2, 4, num_chars).contiguous())
            elif kind == "glove_embedding":
                tensors.append(mask.float().unsqueeze(-1).expand(2, 4, glove_dim[key]) * 0.1)
            else:
                tensors.append(mask.long())
        return tuple(tensors)

    def word_part_example(self, key: str, num_chars: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """The mask and input of two words `(1, 2, ...)`, to trace `word_parts[key]` with."""
        mask = torch.tensor([[True, True]])
        if self.input_kinds[key] == "character_encoding":
            return mask, torch.ones(1, 2, num_chars, dtype=torch.long)
        return mask, torch.ones(1, 2, dtype=torch.long)


class _WordVectors(torch.nn.Module):
    """The per-word part of a `_BiLmLayers`: LM ids `(...)` -> both LMs' input embeddings."""

    def __init__(self, bilm: _BiLmLayers) -> None:
        super().__init__()
        self.forward_embedding = bilm.forward_lm.embedding
        self.backward_embedding = bilm.backward_lm.embedding

    def forward(self, ids: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        return torch.cat([self.forward_embedding(ids), self.backward_embedding(ids)], dim=-1)
