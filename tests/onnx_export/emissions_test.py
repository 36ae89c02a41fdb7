"""
The traceable forms in `onnx_export/emissions.py` against the code they rewrite: its
right-to-left reversal against `dense_lstm.reverse_padded_sequence`, and the dense LM's layers
(`DenseLSTMStack.forward_layers_unpacked`, reversed for the backward LM) against
`dense_lstm.run_backward` over `forward_layers`.
"""

import torch

from ldnet_allennlp.modules.dense_lstm import (
    DenseLSTMStack,
    reverse_padded_sequence,
    run_backward,
)
from ldnet_allennlp.onnx_export.emissions import reverse_within_lengths


def batch():
    torch.manual_seed(0)
    inputs = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.bool)
    return inputs, mask


def test_reverse_within_lengths_is_reverse_padded_sequence():
    inputs, mask = batch()
    assert torch.equal(
        reverse_within_lengths(inputs, mask.sum(dim=1)), reverse_padded_sequence(inputs, mask)
    )


def test_the_unpacked_backward_stack_is_run_backward():
    inputs, mask = batch()
    torch.manual_seed(1)
    stack = DenseLSTMStack(4, 3, 2).eval()
    layer_mask = torch.tensor([1.0, 0.5])
    lengths = mask.sum(dim=1)
    with torch.no_grad():
        want = run_backward(stack, inputs, mask, layer_mask, return_all_layers=True)
        reversed_inputs = reverse_within_lengths(inputs, lengths)
        got = stack.forward_layers_unpacked(reversed_inputs, mask, layer_mask)
        got = [reverse_within_lengths(layer, lengths) for layer in got]
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-6)
