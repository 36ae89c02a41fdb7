"""
`Seq2SeqEncoder` "dense_lstm": a (bi)directional LD-Net dense LSTM usable in any AllenNLP model.
"""

from typing import List, Optional, Union

import torch

from allennlp.modules.seq2seq_encoders.seq2seq_encoder import Seq2SeqEncoder

from ldnet_allennlp.modules.dense_lstm import DenseLSTMStack, run_backward


@Seq2SeqEncoder.register("dense_lstm")
class DenseLSTMEncoder(Seq2SeqEncoder):
    """
    A densely connected LSTM (`DenseLSTMStack`) as a `Seq2SeqEncoder`.

    Unidirectional: output `[x; h_1; ...; h_L]`, dim `input_size + num_layers * hidden_size`.
    Bidirectional: a forward stack and a separate backward stack (run on each sequence's real
    tokens reversed); outputs concatenated in AllenNLP's convention, forward half first:
    `[fwd [x; h_1..h_L]; bwd [x; h_1..h_L]]`, dim `2 * (input_size + num_layers * hidden_size)`.

    With `return_all_layers = True` (what allennlp-models' `language_model_token_embedder` sets
    when it loads a `language_model` archive; it also reads the `num_layers` attribute),
    `forward` instead returns a list of `num_layers` tensors, each
    `(batch_size, num_tokens, get_output_dim())`: entry l (1-based) is, per direction, the dense
    representation available after layer l, `[x; h_1; ...; h_l]`, zero-padded to the full
    width, forward half first. The last entry is the ordinary output. `get_output_dim()` does not
    depend on `return_all_layers`, so a language model's softmax keeps its size when the
    embedder loads it in that mode.

    Registered as `"dense_lstm"`.

    # Parameters

    input_size : `int`
        Size of the input vectors.
    hidden_size : `int`
        Per-layer hidden size (dims each layer adds).
    num_layers : `int`
        Number of LSTM layers per direction (>= 1).
    dropout : `float`, optional (default = `0.0`)
        Dropout on each layer's input, in [0, 1).
    layer_dropout : `float`, optional (default = `0.0`)
        LD-Net layer-wise dropout, in [0, 1).
    bidirectional : `bool`, optional (default = `False`).
    return_all_layers : `bool`, optional (default = `False`).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        dropout: float = 0.0,
        layer_dropout: float = 0.0,
        bidirectional: bool = False,
        return_all_layers: bool = False,
    ) -> None:
        super().__init__(stateful=False)
        self.num_layers = num_layers
        self.return_all_layers = return_all_layers
        self._bidirectional = bidirectional
        self.forward_stack = DenseLSTMStack(
            input_size, hidden_size, num_layers, dropout=dropout, layer_dropout=layer_dropout
        )
        self.backward_stack = (
            DenseLSTMStack(
                input_size, hidden_size, num_layers, dropout=dropout, layer_dropout=layer_dropout
            )
            if bidirectional
            else None
        )

    def get_input_dim(self) -> int:
        return self.forward_stack.get_input_dim()

    def get_output_dim(self) -> int:
        num_directions = 2 if self._bidirectional else 1
        return self.forward_stack.get_output_dim() * num_directions

    def is_bidirectional(self) -> bool:
        return self._bidirectional

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        layer_mask: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, List[torch.Tensor]]:
        """
        # Parameters

        inputs : `torch.Tensor`, `(batch_size, num_tokens, input_size)`
        mask : `torch.BoolTensor`, `(batch_size, num_tokens)`
        layer_mask : `torch.Tensor`, optional, `(num_dirs, num_layers)`
            (or `(num_layers,)` if unidirectional): multiplies each layer (default: none masked).
        """
        if mask is None:
            mask = inputs.new_ones(inputs.shape[:2], dtype=torch.bool)
        forward_mask = backward_mask = None
        if layer_mask is not None:
            layer_mask = layer_mask.view(-1, self.num_layers)
            forward_mask = layer_mask[0]
            backward_mask = layer_mask[1] if self._bidirectional else None
        halves = [self.forward_stack(inputs, mask, forward_mask)]
        if self.backward_stack is not None:
            halves.append(run_backward(self.backward_stack, inputs, mask, backward_mask))
        if not self.return_all_layers:
            return torch.cat(halves, dim=-1)
        input_size, hidden_size = self.forward_stack.input_size, self.forward_stack.hidden_size
        column = torch.arange(halves[0].size(-1), device=inputs.device)
        return [
            # per direction [x; h_1; ...; h_layer], the later layers' columns zeroed
            torch.cat([half.masked_fill(column >= kept, 0.0) for half in halves], dim=-1)
            for kept in (
                input_size + layer * hidden_size for layer in range(1, self.num_layers + 1)
            )
        ]
