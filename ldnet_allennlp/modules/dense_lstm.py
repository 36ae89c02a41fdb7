"""
The densely connected LSTM stack of LD-Net (Liu et al., 2018, §1 of `PAPERS.md`), written once.

Layer l reads the token representation and every earlier layer's output,
`x_l = [x; h_1; ...; h_{l-1}]`, and the stack outputs `[x; h_1; ...; h_L]`.  Because every layer
sees all earlier layers directly, any layer can be removed (its mask `z_l` set to 0, or the layer
cut out with `DenseLSTMStack.pruned`) without breaking the layers above it.

Everything that needs a dense LSTM (the language model, the `dense_lstm` `Seq2SeqEncoder`, the
LD-Net token embedder, the scalar-mix embedder, pruning) uses `DenseLSTMStack` from this file.
"""

from typing import List, Optional, Sequence

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from allennlp.common import FromParams
from allennlp.common.checks import ConfigurationError


class DenseLSTMStack(torch.nn.Module, FromParams):
    """
    `num_layers` unidirectional one-layer LSTMs (`torch.nn.LSTM`, `batch_first`), densely
    connected: layer l (0-based) reads `[x; h_0; ...; h_{l-1}]` of size
    `input_size + l * hidden_size`; the stack outputs `[x; h_0; ...; h_{L-1}]` of size
    `input_size + num_layers * hidden_size` (`get_output_dim()`).

    Per-layer mask (`layer_mask`, `z_l`): layer l's output is multiplied by `z_l` everywhere it
    is used (on the output and on the inputs of later layers).  The stack holds no mask of its
    own: the `layer_mask` passed to `forward` (and which receives gradients) is its owner's, the
    biLM's `layer_mask` parameter, which LD-Net's pruning trains; without one, no layer is
    masked.  (The shipped LMs hold a `layer_mask` buffer of ones per stack; loading drops it.)

    Layer-wise dropout (`layer_dropout`, LD-Net): in training only, each layer independently
    with probability `layer_dropout`, decided once per batch, has its output replaced by zeros
    *on the path into later layers only*; the stack's output always carries every layer; no
    rescaling.  Ordinary (element-wise, rescaled) dropout `dropout` is applied to each layer's
    input.

    Built from a config dict with the keys below (`DenseLSTMStack.from_params`).

    Padding: sequences are packed with their lengths, so padded positions never change a real
    position's result; padded output positions are zero.  Sequences must be left-aligned (the
    mask is `True` on a prefix of each row), as AllenNLP produces them.

    # Parameters

    input_size : `int`
        Size of each input vector `x_t`.
    hidden_size : `int`
        Size of each layer's output `h_{l,t}` (the dims each layer adds to the output).
    num_layers : `int`
        Number of LSTM layers (>= 1).
    dropout : `float`, optional (default = `0.0`)
        Dropout on each layer's input, in [0, 1).
    layer_dropout : `float`, optional (default = `0.0`)
        LD-Net layer-wise dropout probability, in [0, 1).
    kept_layers : `List[int]`, optional (default = `None`, meaning `range(num_layers)`)
        Which layers of the original (unpruned) stack these layers are.  Only a record: a pruned
        stack is an ordinary dense stack with fewer layers, so it can be rebuilt from a config
        with `num_layers = len(kept_layers)` and its state dict.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        dropout: float = 0.0,
        layer_dropout: float = 0.0,
        kept_layers: Optional[List[int]] = None,
    ) -> None:
        super().__init__()
        if input_size < 1:
            raise ConfigurationError(f"input_size must be >= 1, got {input_size}.")
        if hidden_size < 1:
            raise ConfigurationError(f"hidden_size must be >= 1, got {hidden_size}.")
        # A stack pruned of every layer (`kept_layers=[]`) passes its input through: that is
        # what a dense stack whose layer masks are all 0 computes. Otherwise it needs a layer.
        if num_layers < 1 and not (num_layers == 0 and kept_layers == []):
            raise ConfigurationError(
                f"num_layers must be >= 1 (a dense LSTM stack needs a layer), got {num_layers}."
            )
        if not 0.0 <= dropout < 1.0:
            raise ConfigurationError(f"dropout must be in [0, 1), got {dropout}.")
        if not 0.0 <= layer_dropout < 1.0:
            raise ConfigurationError(f"layer_dropout must be in [0, 1), got {layer_dropout}.")
        if kept_layers is None:
            kept_layers = list(range(num_layers))
        if len(kept_layers) != num_layers:
            raise ConfigurationError(
                f"kept_layers has {len(kept_layers)} entries but num_layers is {num_layers}."
            )
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout = dropout
        self.layer_dropout = layer_dropout
        self.kept_layers = [int(i) for i in kept_layers]
        self.layers = torch.nn.ModuleList(
            torch.nn.LSTM(input_size + i * hidden_size, hidden_size, num_layers=1, batch_first=True)
            for i in range(num_layers)
        )
        self._register_load_state_dict_pre_hook(_drop_legacy_layer_mask)

    def get_input_dim(self) -> int:
        return self.input_size

    def get_output_dim(self) -> int:
        return self.input_size + self.num_layers * self.hidden_size

    def _layer_mask(self, layer_mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        if layer_mask is None:
            return None
        if layer_mask.shape != (self.num_layers,):
            raise ValueError(
                f"layer_mask must have shape ({self.num_layers},), got {tuple(layer_mask.shape)}."
            )
        return layer_mask

    def _layer_keep(self) -> List[bool]:
        """Layer-wise dropout decision for this batch: True = the layer feeds later layers."""
        if not self.training or self.layer_dropout == 0.0:
            return [True] * self.num_layers
        draws = torch.rand(self.num_layers)
        return [bool(d >= self.layer_dropout) for d in draws]

    def _autograd_reaches_layers(
        self, inputs: torch.Tensor, layer_mask: Optional[torch.Tensor]
    ) -> bool:
        """Whether autograd will go back through this call's LSTMs."""
        if not torch.is_grad_enabled():
            return False
        if inputs.requires_grad or (layer_mask is not None and layer_mask.requires_grad):
            return True
        return any(parameter.requires_grad for parameter in self.parameters())

    def forward_layers(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        layer_mask: Optional[torch.Tensor] = None,
    ) -> List[torch.Tensor]:
        """
        Runs the stack and returns its pieces `[x, h_0, ..., h_{L-1}]` separately.

        The stack's mode decides dropout and layer dropout. Its LSTMs run in training mode
        whenever the stack trains or autograd will go back through them (inputs, `layer_mask` or
        weights that require grad, grad mode on): cuDNN keeps what an RNN's backward needs only
        in training mode, and a one-layer `torch.nn.LSTM` computes the same in either mode, so a
        stack in eval mode (a frozen LM under a trained layer mask, a fine-tuned LM) gives the
        same numbers on every device and can be backpropagated through on a GPU.

        # Parameters

        inputs : `torch.Tensor`, `(batch_size, num_tokens, input_size)`
        mask : `torch.BoolTensor`, `(batch_size, num_tokens)`, left-aligned
        layer_mask : `torch.Tensor`, optional, `(num_layers,)`; default: no layer masked

        # Returns

        A list of `num_layers + 1` tensors: `inputs` (zeroed at padding), shape
        `(batch_size, num_tokens, input_size)`, then each layer's output `z_l * h_l`, shape
        `(batch_size, num_tokens, hidden_size)`, zero at padding.  Their concatenation along the
        last dim is `forward(...)`.
        """
        z = self._layer_mask(layer_mask)
        batch_size, num_tokens, _ = inputs.shape
        lengths = mask.sum(dim=1).long()
        # pack_padded_sequence refuses empty sequences; run them with length 1 and zero them after.
        packed = pack_padded_sequence(
            inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False
        )
        keep = self._layer_keep()

        def repack(data: torch.Tensor) -> PackedSequence:
            return PackedSequence(
                data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
            )

        # All layers share the packing, so we work on the packed data (num_real_tokens, dim).
        layer_input = packed.data
        outputs = []
        lstm_training = self.training or self._autograd_reaches_layers(inputs, z)
        for i, lstm in enumerate(self.layers):
            dropped = torch.nn.functional.dropout(layer_input, self.dropout, self.training)
            hidden, _ = run_lstm(lstm, repack(dropped), lstm_training)
            hidden = hidden.data if z is None else hidden.data * z[i]
            outputs.append(hidden)
            if i + 1 < self.num_layers:
                into_later = hidden if keep[i] else torch.zeros_like(hidden)
                layer_input = torch.cat([layer_input, into_later], dim=-1)

        float_mask = mask.unsqueeze(-1).to(inputs.dtype)
        pieces = [inputs * float_mask]
        for hidden in outputs:
            padded, _ = pad_packed_sequence(
                repack(hidden), batch_first=True, total_length=num_tokens
            )
            pieces.append(padded * float_mask)
        return pieces

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        layer_mask: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """
        # Parameters

        inputs : `torch.Tensor`, `(batch_size, num_tokens, input_size)`
        mask : `torch.BoolTensor`, `(batch_size, num_tokens)`, left-aligned
        layer_mask : `torch.Tensor`, optional, `(num_layers,)`; default: no layer masked

        # Returns

        `[x; z_0 h_0; ...; z_{L-1} h_{L-1}]`, `(batch_size, num_tokens, get_output_dim())`,
        zero at padded positions.
        """
        return torch.cat(self.forward_layers(inputs, mask, layer_mask), dim=-1)

    def input_columns(self, layer: int, keep_layers: Sequence[int]) -> List[int]:
        """
        Column indices of layer `layer`'s input (`[x; h_0; ...; h_{layer-1}]`) that belong to
        `x` or to one of the earlier layers in `keep_layers`.  Also the columns of this stack's
        output (`layer = num_layers`) that survive pruning, e.g. to slice a projection over it.
        """
        columns = list(range(self.input_size))
        for k in sorted(keep_layers):
            if k < layer:
                start = self.input_size + k * self.hidden_size
                columns.extend(range(start, start + self.hidden_size))
        return columns

    def pruned(self, keep_layers: Sequence[int]) -> "DenseLSTMStack":
        """
        A new, smaller stack made of the layers `keep_layers` (indices into this stack), with
        the same weights; later layers' input weights lose the columns of the removed layers.
        `kept_layers` records the surviving layers' indices in the *original* stack.  With
        `z_l = 0` for every removed layer, this stack and the pruned one give the same outputs
        for the kept layers (with no layer kept, both give `[x]`).
        """
        keep = sorted(set(int(i) for i in keep_layers))
        # an empty `keep_layers` gives a stack without layers: its output is its input
        if keep and (keep[0] < 0 or keep[-1] >= self.num_layers):
            raise ConfigurationError(
                f"keep_layers {keep} out of range for a stack of {self.num_layers} layers."
            )
        smaller = DenseLSTMStack(
            self.input_size,
            self.hidden_size,
            len(keep),
            dropout=self.dropout,
            layer_dropout=self.layer_dropout,
            kept_layers=[self.kept_layers[i] for i in keep],
        )
        smaller.to(next((p.device for p in self.parameters()), torch.device("cpu")))
        with torch.no_grad():
            for new_index, old_index in enumerate(keep):
                old, new = self.layers[old_index], smaller.layers[new_index]
                columns = torch.tensor(self.input_columns(old_index, keep), dtype=torch.long)
                new.weight_ih_l0.copy_(old.weight_ih_l0[:, columns])
                new.weight_hh_l0.copy_(old.weight_hh_l0)
                new.bias_ih_l0.copy_(old.bias_ih_l0)
                new.bias_hh_l0.copy_(old.bias_hh_l0)
        smaller.train(self.training)
        return smaller


def run_lstm(lstm: torch.nn.LSTM, inputs, training: bool):
    """
    `lstm(inputs)` with `lstm` in training mode or not for this call only. For the stack's
    one-layer, dropout-free LSTMs the mode changes nothing but what cuDNN keeps for backward.
    """
    previous = lstm.training
    if previous == training:
        return lstm(inputs)
    lstm.training = training
    try:
        return lstm(inputs)
    finally:
        lstm.training = previous


def _drop_legacy_layer_mask(state_dict, prefix, *args) -> None:
    """
    Load pre-hook: drops a stack's own `layer_mask` buffer, all ones, which the shipped LMs
    (`pretrained/lm_forward.tar.gz`, `lm_backward.tar.gz`) hold at `_encoder.layer_mask`. A stack
    keeps no mask of its own (the mask is an argument, its one home the biLM's `layer_mask`), and
    a stack without the buffer computes the same as one with ones; any other value is refused
    rather than silently ignored.
    """
    stored = state_dict.pop(prefix + "layer_mask", None)
    if stored is not None and not bool((stored == 1).all()):
        raise ValueError(
            f"{prefix}layer_mask holds {stored.tolist()}: a DenseLSTMStack keeps no mask of its "
            "own, and the stored buffer it drops (as the shipped LMs hold) must be always ones."
        )


def reverse_padded_sequence(inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
    """
    Reverses the real (unpadded) part of each sequence, leaving padding where it is.
    Its own inverse.

    # Parameters

    inputs : `torch.Tensor`, `(batch_size, num_tokens, ...)`
    mask : `torch.BoolTensor`, `(batch_size, num_tokens)`, left-aligned

    # Returns

    A tensor shaped like `inputs`.
    """
    num_tokens = inputs.size(1)
    lengths = mask.sum(dim=1, keepdim=True).long()  # (batch_size, 1)
    positions = torch.arange(num_tokens, device=inputs.device).unsqueeze(0)  # (1, num_tokens)
    reversed_positions = lengths - 1 - positions
    # Padding positions map to themselves.
    index = torch.where(positions < lengths, reversed_positions, positions)
    if inputs.dim() > 2:
        index = index.view(*index.shape, *([1] * (inputs.dim() - 2))).expand_as(inputs)
    return inputs.gather(1, index)


def run_backward(
    stack: DenseLSTMStack,
    inputs: torch.Tensor,
    mask: torch.BoolTensor,
    layer_mask: Optional[torch.Tensor] = None,
    return_all_layers: bool = False,
):
    """
    Runs `stack` right-to-left: on each sequence's real tokens reversed, with the result put back
    in the original token order (so position t of the result has read tokens t..n-1).

    # Parameters

    stack : `DenseLSTMStack`
    inputs : `torch.Tensor`, `(batch_size, num_tokens, stack.input_size)`
    mask : `torch.BoolTensor`, `(batch_size, num_tokens)`, left-aligned
    layer_mask : `torch.Tensor`, optional, `(stack.num_layers,)`; default: no layer masked
    return_all_layers : `bool`, optional (default = `False`)

    # Returns

    What `stack.forward` returns (`(batch_size, num_tokens, stack.get_output_dim())`), or, with
    `return_all_layers`, what `stack.forward_layers` returns.
    """
    reversed_inputs = reverse_padded_sequence(inputs, mask)
    if return_all_layers:
        layers = stack.forward_layers(reversed_inputs, mask, layer_mask)
        return [reverse_padded_sequence(layer, mask) for layer in layers]
    return reverse_padded_sequence(stack(reversed_inputs, mask, layer_mask), mask)
