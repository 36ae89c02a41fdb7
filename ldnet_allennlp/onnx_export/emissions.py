"""
`EmissionNetwork`: a CRF tagger's network, from indexed tokens to the CRF's emissions (logits),
rewritten with operations that trace into one ONNX graph whose batch size, sentence length and
word length are all dynamic. What `allennlp ldnet-export` exports.

The tagger computes the same things with code that does not trace: its LSTMs
(`PytorchSeq2SeqWrapper`, `DenseLSTMStack`) run on packed sequences, whose lengths a trace would
freeze. Here every LSTM layer (each LM's, each layer of the word encoder with both directions)
is one ONNX `LSTM` node (`_OnnxLstm`) with the sentences' lengths as its `sequence_lens`, which
runs a right-to-left direction from each sentence's last position and leaves zeros past it: no
reversals, time-major in between (one transpose in and out of the LMs and of the encoder). In
eager mode the same module runs torch's LSTM on packed sequences, so the exporter's check
compares like with like. The biLM's sentence boundaries are read by its LMs before the
sentence's tokens: for `layer_selection`, each LM starts from the states that reading its
boundary leaves (computed once, expanded over the batch), so the LMs run over the tokens alone;
for `dense_lm_scalar_mix` (and with `boundary_states=False`) they are put in (on ids,
`modules/sentence_boundaries.py`) and taken out by slicing. The LM features are zeroed at
padding as the tagger's are (the int8 graph quantises the projection's input over the whole
batch).

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
such input) and the runtime looks up; where the boundaries are positions of the LM input, the
runtime also puts the vectors of `<S>` and `</S>` around each sentence of it
(`EmissionNetwork.boundary_vectors`, the indexer's `sentence_boundaries`), which is then
`(batch, num_tokens + 2, dim)`.

Embedding tables whose values are all exactly representable in float16 (those of archives
written with `ldnet-prune --fp16`, and the shipped LMs) are stored in float16 and cast after the
lookup: the same float32 values, half the file.
"""

from typing import Dict, List, Optional, Sequence, Tuple

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
from ldnet_allennlp.modules.dense_lstm import reverse_padded_sequence
from ldnet_allennlp.modules.sentence_boundaries import add_sentence_boundaries
from ldnet_runtime.export_format import MASK_INPUT

SUPPORTED_EMBEDDERS = (
    "embedding, character_encoding with a cnn encoder, layer_selection, dense_lm_scalar_mix and "
    "glove_embedding"
)


# torch keeps an LSTM's gate blocks as (input, forget, cell, output), ONNX as (input, output,
# forget, cell)
ONNX_GATE_ORDER = (0, 3, 1, 2)


def _run_lstm(
    lstm: torch.nn.LSTM,
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    initial: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """A one-layer, one-direction `lstm` over time-major `inputs` `(num_tokens, batch, dim)`,
    packed by `lengths`, from the states `initial` (`(1, batch, hidden)` each, default zeros):
    `(num_tokens, batch, hidden)`, zero past each length."""
    packed = pack_padded_sequence(inputs, lengths.cpu(), enforce_sorted=False)
    return pad_packed_sequence(lstm(packed, initial)[0], total_length=inputs.size(0))[0]


class _LstmNode(torch.autograd.Function):
    """
    One ONNX `LSTM` node over time-major inputs `(num_tokens, batch, dim)` with the sentences'
    `lengths` `(batch,)` int32 as its `sequence_lens`: a right-to-left direction starts at each
    sentence's last position, outputs past a length are zero, and the initial states are the node's
    own zeros, or `initial_h` and `initial_c` `(num_directions, 1, hidden)`, the same for every
    sentence (expanded over the batch). The output, `(num_tokens, batch, num_directions * hidden)`
    or with `batch_first` `(batch, num_tokens, num_directions * hidden)`, is the node's `Y` with one
    `Squeeze` (one direction, time-major) or a `Transpose` and a `Reshape`.
    """

    @staticmethod
    def forward(  # type: ignore
        ctx,
        inputs,
        lengths,
        weights,
        recurrent,
        bias,
        lstms,
        direction,
        batch_first,
        initial_h=None,
        initial_c=None,
    ) -> torch.Tensor:
        def initial(index: int) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
            if initial_h is None:
                return None
            batch = lengths.size(0)
            return tuple(  # type: ignore
                state[index : index + 1].expand(1, batch, state.size(2))
                for state in (initial_h, initial_c)
            )

        outputs = []
        if direction in ("forward", "bidirectional"):
            outputs.append(_run_lstm(lstms[0], inputs, lengths, initial(0)))
        if direction in ("reverse", "bidirectional"):
            # each sentence reversed in place (batch first), run left to right, put back
            positions = torch.arange(inputs.size(0), device=inputs.device).unsqueeze(0)
            mask = positions < lengths.unsqueeze(1)
            reversed_inputs = reverse_padded_sequence(inputs.transpose(0, 1), mask)
            last = len(lstms) - 1
            hidden = _run_lstm(lstms[-1], reversed_inputs.transpose(0, 1), lengths, initial(last))
            hidden = reverse_padded_sequence(hidden.transpose(0, 1), mask)
            outputs.append(hidden.transpose(0, 1))
        output = torch.cat(outputs, dim=-1)
        return output.transpose(0, 1) if batch_first else output

    @staticmethod
    def symbolic(  # type: ignore
        g,
        inputs,
        lengths,
        weights,
        recurrent,
        bias,
        lstms,
        direction,
        batch_first,
        initial_h=None,
        initial_c=None,
    ):
        hidden_size = lstms[0].hidden_size
        states = []
        if initial_h is not None:  # (num_directions, 1, hidden) -> (num_directions, batch, ...)
            shape = g.op(
                "Concat",
                g.op("Constant", value_t=torch.tensor([len(lstms)], dtype=torch.long)),
                g.op("Shape", lengths),
                g.op("Constant", value_t=torch.tensor([hidden_size], dtype=torch.long)),
                axis_i=0,
            )
            states = [g.op("Expand", initial_h, shape), g.op("Expand", initial_c, shape)]
        y, _, _ = g.op(
            "LSTM",
            inputs,
            weights,
            recurrent,
            bias,
            lengths,
            *states,
            direction_s=direction,
            hidden_size_i=hidden_size,
            outputs=3,
        )
        if direction != "bidirectional" and not batch_first:
            axis = g.op("Constant", value_t=torch.tensor([1], dtype=torch.long))
            return g.op("Squeeze", y, axis)
        y = g.op("Transpose", y, perm_i=[2, 0, 1, 3] if batch_first else [0, 2, 1, 3])
        shape = g.op("Constant", value_t=torch.tensor([0, 0, -1], dtype=torch.long))
        return g.op("Reshape", y, shape)


class _OnnxLstm(torch.nn.Module):
    """
    One-layer LSTMs over the same inputs as one ONNX `LSTM` node (`_LstmNode`): `forward` (one
    left-to-right LSTM), `reverse` (one right-to-left: it reads each sentence from its last
    token, the output in the original order) or `bidirectional` (both, outputs concatenated).
    They start from zero states, or from the states given to `start_from` (the same for every
    sentence).

    # Parameters

    lstms : `List[torch.nn.LSTM]`
        One-layer, one-direction, `batch_first=False` LSTMs: one, or for
        `bidirectional` the left-to-right one and the right-to-left one.
    direction : `str`
        `forward`, `reverse` or `bidirectional`.
    """

    def __init__(self, lstms: List[torch.nn.LSTM], direction: str) -> None:
        super().__init__()
        self.lstms = lstms  # not submodules: the node's weights are the buffers below
        self.direction = direction
        for lstm in lstms:
            lstm.requires_grad_(False)

        def onnx_order(tensor: torch.Tensor) -> torch.Tensor:
            blocks = tensor.detach().chunk(4, dim=0)
            return torch.cat([blocks[i] for i in ONNX_GATE_ORDER], dim=0)

        weights = [onnx_order(lstm.weight_ih_l0) for lstm in lstms]
        recurrent = [onnx_order(lstm.weight_hh_l0) for lstm in lstms]
        bias = [
            (
                torch.cat([onnx_order(lstm.bias_ih_l0), onnx_order(lstm.bias_hh_l0)])
                if lstm.bias
                else torch.zeros(8 * lstm.hidden_size)
            )
            for lstm in lstms
        ]
        self.register_buffer("weights", torch.stack(weights).clone())
        self.register_buffer("recurrent", torch.stack(recurrent).clone())
        self.register_buffer("bias", torch.stack(bias).clone())
        self.register_buffer("initial_h", None)
        self.register_buffer("initial_c", None)

    def start_from(self, h: torch.Tensor, c: torch.Tensor) -> None:
        """Every sentence starts from the states `h` and `c` `(num_directions, 1, hidden)`
        (expanded over the batch: one ONNX `Expand` each)."""
        self.initial_h = h.detach().clone()
        self.initial_c = c.detach().clone()

    def forward(
        self, inputs: torch.Tensor, lengths: torch.Tensor, batch_first: bool = False
    ) -> torch.Tensor:
        """`inputs` `(num_tokens, batch, dim)`, `lengths` `(batch,)` int32 -> `(num_tokens,
        batch, num_directions * hidden)`, or `(batch, num_tokens, ...)` with `batch_first`."""
        states = [] if self.initial_h is None else [self.initial_h, self.initial_c]
        return _LstmNode.apply(
            inputs,
            lengths,
            self.weights,
            self.recurrent,
            self.bias,
            self.lstms,
            self.direction,
            batch_first,
            *states,
        )


def single_lstm(lstm: torch.nn.LSTM, layer: int, suffix: str = "") -> torch.nn.LSTM:
    """Layer `layer` of `lstm` in one direction (`suffix` "" or "_reverse"), as a one-layer,
    one-direction, time-major LSTM with the same weights."""
    weight_ih = getattr(lstm, f"weight_ih_l{layer}{suffix}")
    single = torch.nn.LSTM(weight_ih.size(1), lstm.hidden_size, bias=lstm.bias)
    kinds = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if lstm.bias else ())
    with torch.no_grad():
        for kind in kinds:
            getattr(single, f"{kind}_l0").copy_(getattr(lstm, f"{kind}_l{layer}{suffix}"))
    return single.eval()


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
    -> `(batch, num_tokens, output_dim)`, or of words `(num_words, num_chars)` -> `(num_words,
    output_dim)` (no reshapes in the graph), AllenNLP's `CnnEncoder` with the same values in
    fewer graph nodes:

    - a convolution position whose window reaches into the padding (id 0) is pushed to the
      dtype's minimum before the max: AllenNLP finds those positions from each word's number
      of characters, here from the window's last character being padding (the characters of
      a word come first, then its padding), with `where` in place of adding the minimum (the
      same value: an activation is far below the minimum's spacing);
    - AllenNLP also zeroes the embedded characters at padding first, which changes nothing
      here: every window that holds padding is one of those positions;
    - maxima still at that minimum (a word shorter than the window) are set to 0; then the
      projection, if any.
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
        words = characters.dim() == 2
        if not words:
            batch, num_tokens = characters.size(0), characters.size(1)
            characters = characters.flatten(0, 1)  # TimeDistributed: (words, num_chars)
        embedded = self.embedding(characters).transpose(1, 2)
        padding = characters == 0
        minimum = min_value_of_dtype(embedded.dtype)
        pooled = []
        for convolution in self.convolutions:
            activations = self.activation(convolution(embedded))
            # (words, 1, positions): the window's last character is padding
            reaches_padding = padding[:, convolution.kernel_size[0] - 1 :].unsqueeze(1)
            pooled.append(torch.where(reaches_padding, minimum, activations).amax(dim=2))
        output = torch.cat(pooled, dim=1) if len(pooled) > 1 else pooled[0]
        output = torch.where(output == minimum, 0.0, output)
        if self.projection is not None:
            output = self.projection(output)
        return output if words else output.reshape(batch, num_tokens, -1)


class _DenseLstmNodes(torch.nn.Module):
    """
    A `DenseLSTMStack` in eval mode, time-major, each layer one ONNX `LSTM` node (`_OnnxLstm`,
    `direction` `forward`, or `reverse` for a backward LM): inputs `(num_tokens, batch, dim)`
    and the lengths `(batch,)` int32 -> `[x, z_0 h_0, ...]`, each `(num_tokens, batch, dim)`
    in the original token order, the hidden layers zero past each length (what
    `DenseLSTMStack.forward_layers`, or `dense_lstm.run_backward`, computes at real positions).

    # Parameters

    stack : `DenseLSTMStack`
    layer_mask : `Sequence[float]`
        What multiplies each layer (`z_i`; fixed).
    direction : `str`
        `forward` or `reverse`.
    """

    def __init__(self, stack: torch.nn.Module, layer_mask: Sequence[float], direction: str):
        super().__init__()
        self.nodes = torch.nn.ModuleList(
            _OnnxLstm([single_lstm(lstm, 0)], direction) for lstm in stack.layers
        )
        self.layer_mask = [float(z) for z in layer_mask]
        self.widths = [lstm.hidden_size for lstm in stack.layers]

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> List[torch.Tensor]:
        pieces = [inputs]
        layer_input = inputs
        for node, z in zip(self.nodes, self.layer_mask):
            hidden = node(layer_input, lengths)
            if z != 1.0:
                hidden = hidden * z
            pieces.append(hidden)
            layer_input = torch.cat([layer_input, hidden], dim=-1)
        return pieces

    def start_after(self, boundary: torch.Tensor) -> None:
        """
        Every sentence starts from the states each layer has after reading `boundary` `(dim,)`
        alone from zero states (`_OnnxLstm.start_from`): what reading a sentence boundary first
        leaves, whatever the sentence.
        """
        layer_input = boundary.detach().float().view(1, 1, -1)
        with torch.no_grad():
            for node, z in zip(self.nodes, self.layer_mask):
                hidden, (h, c) = node.lstms[0](layer_input)
                node.start_from(h, c)
                if z != 1.0:
                    hidden = hidden * z
                layer_input = torch.cat([layer_input, hidden], dim=-1)


class _DenseLm(torch.nn.Module):
    """
    One direction of a `DenseBiLm` (after any pruning, its fixed layer masks applied): its word
    embedding (`embedding`) and its layers over the embedded input (`layers`, a
    `_DenseLstmNodes`, right to left for the backward LM).
    """

    def __init__(self, lm: DenseLanguageModel, layer_mask: torch.Tensor, where: str) -> None:
        super().__init__()
        self.embedding = _Table(lm.token_embedder(), f"{where}'s word embedding")
        direction = "reverse" if lm.direction == "backward" else "forward"
        self.layers = _DenseLstmNodes(lm.encoder, layer_mask.tolist(), direction)


class _BiLmLayers(torch.nn.Module):
    """
    A `DenseBiLm` (after any pruning, its fixed layer masks applied), time-major: both LMs'
    layers (`_DenseLm`) over the LM input and the sentence boundaries.

    The LM input is the ids `(batch, num_tokens)`, or with `from_vectors` both LMs' input
    embeddings side by side (`_WordVectors`), `(batch, num_tokens', dim)`. Where the biLM adds
    sentence boundaries, the forward LM reads `<S>` first and the backward LM `</S>`:

    - with `boundary_states`, each LM starts from the states that reading its boundary leaves
      (`_DenseLstmNodes.start_after`), the same for every sentence, so its nodes run over the
      tokens alone: `num_tokens' = num_tokens`, and the outputs are the tokens' (two LSTM
      steps fewer per LM layer);
    - else the boundaries are positions of the input: put in here on ids, or by the runtime on
      vectors (`boundary_ids`: it puts the vectors of `<S>` and `</S>` before and after each
      sentence), so `num_tokens' = num_tokens + 2`, and `without_boundaries` takes them out
      again.
    """

    def __init__(
        self,
        bilm: DenseBiLm,
        where: str,
        from_vectors: bool = False,
        boundary_states: bool = False,
    ) -> None:
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
        # whether the sentence boundaries are positions of the LM input
        self.boundary_positions = self.add_sentence_boundaries and not boundary_states
        if self.add_sentence_boundaries and boundary_states:
            with torch.no_grad():
                bos = self.forward_lm.embedding(torch.tensor(self.bos))
                eos = self.backward_lm.embedding(torch.tensor(self.eos))
            self.forward_lm.layers.start_after(bos)
            self.backward_lm.layers.start_after(eos)

    @property
    def boundary_ids(self) -> Optional[List[int]]:
        """The ids of `<S>` and `</S>` when the input vectors carry the sentence boundaries."""
        return [self.bos, self.eos] if self.from_vectors and self.boundary_positions else None

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor
    ) -> Tuple[torch.Tensor, List[torch.Tensor], List[torch.Tensor], torch.Tensor]:
        """
        `inputs` (the class docstring) and the `mask` `(batch, num_tokens)` -> the input
        vectors of both LMs `(num_tokens', batch, dim)`, each LM's layers `[x, z h for each kept
        layer]` `(num_tokens', batch, dim)`, and the LM lengths `(batch,)` int32.
        """
        lengths = mask.sum(dim=1, dtype=torch.int32)
        if self.boundary_positions:
            lengths = lengths + 2
        if self.from_vectors:
            vectors = inputs
        else:
            ids = inputs
            if self.boundary_positions:
                ids = add_sentence_boundaries(ids, self.bos, self.eos)
            vectors = torch.cat(
                [self.forward_lm.embedding(ids), self.backward_lm.embedding(ids)], dim=-1
            )
        vectors = vectors.transpose(0, 1)
        forward_inputs = vectors[..., : self.forward_dim]
        backward_inputs = vectors[..., self.forward_dim :]
        return (
            vectors,
            self.forward_lm.layers(forward_inputs, lengths),
            self.backward_lm.layers(backward_inputs, lengths),
            lengths,
        )

    def without_boundaries(self, tensor: torch.Tensor) -> torch.Tensor:
        """`(num_tokens', batch, dim)` -> `(num_tokens, batch, dim)` (time-major still)."""
        return tensor[1:-1] if self.boundary_positions else tensor


class _LayerSelection(torch.nn.Module):
    """
    `layer_selection`: the LM input (`_BiLmLayers`) -> `r_t = ReLU(W_cr [h_t; h^r_t] + b_cr)`,
    `(batch, num_tokens, projection_dim)`, with `DenseBiLm`'s sentence boundaries as the LMs'
    initial states (`boundary_states`, `_BiLmLayers`: the LMs run over the tokens alone) or as
    positions of their input. The layers
    are concatenated as `[x_fwd; x_bwd; hidden layers of the forward LM; of the backward LM]`,
    the projection's input columns put in that order (one concatenation, the input vectors
    whole).
    """

    def __init__(
        self,
        embedder: LayerSelectionTokenEmbedder,
        where: str,
        from_vectors: bool = False,
        boundary_states: bool = True,
    ) -> None:
        super().__init__()
        self.bilm = _BiLmLayers(embedder.bilm, where, from_vectors, boundary_states)
        projection = embedder.projection
        # the tagger's projection reads [x_fwd; h_fwd ...; x_bwd; h_bwd ...]
        forward_x = self.bilm.forward_dim
        forward_all = forward_x + sum(self.bilm.forward_lm.layers.widths)
        backward_x = projection.in_features - forward_all - sum(self.bilm.backward_lm.layers.widths)
        order = [
            *range(forward_x),
            *range(forward_all, forward_all + backward_x),
            *range(forward_x, forward_all),
            *range(forward_all + backward_x, projection.in_features),
        ]
        self.projection = torch.nn.Linear(projection.in_features, projection.out_features)
        with torch.no_grad():
            self.projection.weight.copy_(projection.weight[:, order])
            self.projection.bias.copy_(projection.bias)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        vectors, forward_layers, backward_layers, _ = self.bilm(inputs, mask)
        layers = torch.cat([vectors] + forward_layers[1:] + backward_layers[1:], dim=-1)
        layers = self.bilm.without_boundaries(layers)
        # zero at padding, as the tagger's: the int8 graph quantises the projection's input
        # over the whole batch. Input vectors from the runtime are zero there already (its
        # padding rows), and so are the LMs' layers without boundary positions (zero past each
        # length): nothing to multiply
        if self.bilm.boundary_positions or not self.bilm.from_vectors:
            layers = layers * mask.t().unsqueeze(-1).to(layers.dtype)
        # time-major until the projection's narrower output
        return torch.relu(self.projection(layers)).transpose(0, 1)


class _ScalarMix(torch.nn.Module):
    """
    `dense_lm_scalar_mix`: the LM input (`_BiLmLayers`) -> its first representation,
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
        _, forward_layers, backward_layers, lengths = self.bilm(inputs, mask)
        positions = torch.arange(forward_layers[0].size(0), device=mask.device).unsqueeze(1)
        lm_mask = (positions < lengths.unsqueeze(0)).unsqueeze(-1)  # (num_tokens', batch, 1)
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
                layer = masked_layer_norm(layer, lm_mask, elements)
            weight = torch.cat(
                [
                    self.weights[0, index].expand(self.widths[0]),
                    self.weights[1, index].expand(self.widths[1]),
                ]
            )
            mixed = weight * layer if mixed is None else mixed + weight * layer
        assert mixed is not None
        representation = self.bilm.without_boundaries(mixed).transpose(0, 1)
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
    (both directions) one ONNX `LSTM` node with the sentences' lengths as its `sequence_lens`
    (`_OnnxLstm`), time-major in between.
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
        suffixes = ["", "_reverse"] if lstm.bidirectional else [""]
        direction = "bidirectional" if lstm.bidirectional else "forward"
        self.layers = torch.nn.ModuleList(
            _OnnxLstm([single_lstm(lstm, layer, suffix) for suffix in suffixes], direction)
            for layer in range(lstm.num_layers)
        )

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1, dtype=torch.int32)
        output = inputs.transpose(0, 1)
        for i, layer in enumerate(self.layers):
            output = layer(output, lengths, batch_first=i == len(self.layers) - 1)
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
    def from_tagger(
        cls, model: torch.nn.Module, word_tables: bool = False, boundary_states: bool = True
    ) -> "EmissionNetwork":
        """
        The network of a loaded allennlp-models `CrfTagger` (so also `ldnet_crf_tagger`); with
        `word_tables`, from the word tables' vectors (the module docstring); with
        `boundary_states`, a `layer_selection`'s LMs start from the states their sentence
        boundaries leave (`_BiLmLayers`), else the boundaries are positions of their input.
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
                parts[key] = _LayerSelection(token_embedder, where, word_tables, boundary_states)
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
                    vectors = self.word_parts[key](word_input).reshape(2, -1)  # 2 words' vectors
                dim = vectors.size(-1)
                example = mask.float().unsqueeze(-1).expand(2, 4, dim) * vectors[0]
                boundaries = self.boundary_vectors(key)
                if boundaries is not None:  # <S> first, </S> after each sentence (4 and 2)
                    bos, eos = boundaries
                    example = functional.pad(example, (0, 0, 1, 1))
                    example[:, 0] = bos
                    example[0, 5] = example[1, 3] = eos
                tensors.append(example)
            elif kind == "character_encoding":
                tensors.append(mask.long().unsqueeze(-1).expand(2, 4, num_chars).contiguous())
            elif kind == "glove_embedding":
                tensors.append(mask.float().unsqueeze(-1).expand(2, 4, glove_dim[key]) * 0.1)
            else:
                tensors.append(mask.long())
        return tuple(tensors)

    def boundary_vectors(self, key: str) -> Optional[torch.Tensor]:
        """For an LM input from word vectors whose biLM adds sentence boundaries, the vectors
        of `<S>` and `</S>` `(2, dim)`, which the runtime puts before and after each sentence
        (the input is then `(batch, num_tokens + 2, dim)`); else None."""
        bilm = getattr(self.parts[key], "bilm", None)
        if bilm is None or bilm.boundary_ids is None:
            return None
        with torch.no_grad():
            return self.word_parts[key](torch.tensor(bilm.boundary_ids))

    def word_part_example(self, key: str, num_chars: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """The mask and input of two words, to trace `word_parts[key]` with: ids `(1, 2)`, or
        character ids `(2, num_chars)` (a character CNN's graph takes words)."""
        mask = torch.tensor([[True, True]])
        if self.input_kinds[key] == "character_encoding":
            return mask, torch.ones(2, num_chars, dtype=torch.long)
        return mask, torch.ones(1, 2, dtype=torch.long)


class _WordVectors(torch.nn.Module):
    """The per-word part of a `_BiLmLayers`: LM ids `(...)` -> both LMs' input embeddings."""

    def __init__(self, bilm: _BiLmLayers) -> None:
        super().__init__()
        self.forward_embedding = bilm.forward_lm.embedding
        self.backward_embedding = bilm.backward_lm.embedding

    def forward(self, ids: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        return torch.cat([self.forward_embedding(ids), self.backward_embedding(ids)], dim=-1)
