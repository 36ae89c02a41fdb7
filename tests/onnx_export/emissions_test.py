"""
The traceable forms in `onnx_export/emissions.py` against the code they rewrite: `_OnnxLstm`
(one ONNX `LSTM` node with the sentences' lengths) in eager mode against torch's LSTMs on
packed sequences, and its exported node on onnxruntime against eager mode, in each direction,
padding included; the dense LM's time-major layers (`_DenseLstmNodes`, the backward one right
to left) against `DenseLSTMStack.forward_layers` and `dense_lstm.run_backward`.
"""

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ldnet_allennlp.modules.dense_lstm import DenseLSTMStack, run_backward
from ldnet_allennlp.onnx_export.emissions import _DenseLstmNodes, _OnnxLstm, single_lstm

LENGTHS = [5, 2, 4]


def batch(num_tokens=5, lengths=LENGTHS, dim=4):
    """Time-major inputs `(num_tokens, batch, dim)`, their int32 lengths, and the batch-first
    mask."""
    torch.manual_seed(0)
    inputs = torch.randn(num_tokens, len(lengths), dim)
    mask = torch.arange(num_tokens).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return inputs, torch.tensor(lengths, dtype=torch.int32), mask


def packed_lstm(lstm: torch.nn.LSTM, inputs, lengths):
    """torch's own: a (possibly bidirectional) LSTM on packed time-major inputs."""
    packed = pack_padded_sequence(inputs, lengths, enforce_sorted=False)
    return pad_packed_sequence(lstm(packed)[0], total_length=inputs.size(0))[0]


def node_of(direction: str):
    """An `_OnnxLstm` in `direction` and the torch LSTM whose weights it has."""
    torch.manual_seed(1)
    both = torch.nn.LSTM(4, 3, bidirectional=direction == "bidirectional").eval()
    if direction == "reverse":  # a right-to-left LSTM: the reverse half of a bidirectional one
        both = torch.nn.LSTM(4, 3, bidirectional=True).eval()
        return _OnnxLstm([single_lstm(both, 0, "_reverse")], "reverse"), both
    suffixes = ["", "_reverse"] if direction == "bidirectional" else [""]
    return _OnnxLstm([single_lstm(both, 0, s) for s in suffixes], direction), both


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_the_lstm_node_is_torchs_packed_lstm(direction):
    node, lstm = node_of(direction)
    inputs, lengths, mask = batch()
    with torch.no_grad():
        got = node(inputs, lengths)
        want = packed_lstm(lstm, inputs, lengths)
        got_batch_first = node(inputs, lengths, batch_first=True)
    if direction == "reverse":
        want = want[..., 3:]  # the reverse half
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-6)
    assert torch.equal(got_batch_first, got.transpose(0, 1))
    assert not got[~mask.t()].any()  # zero past each length


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_the_exported_node_runs_as_in_eager_mode(direction, batch_first, tmp_path):
    """One `LSTM` node (plus a squeeze or a transpose and a reshape) whose outputs on
    onnxruntime are the eager ones, at another batch and length than traced with."""
    node, _ = node_of(direction)

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.node = node

        def forward(self, inputs, lengths):
            return self.node(inputs, lengths, batch_first=batch_first)

    inputs, lengths, _ = batch()
    path = tmp_path / "lstm.onnx"
    with torch.no_grad():
        torch.onnx.export(
            Wrapper(),
            (inputs, lengths),
            str(path),
            dynamo=False,
            input_names=["inputs", "lengths"],
            dynamic_axes={"inputs": {0: "num_tokens", 1: "batch"}, "lengths": {0: "batch"}},
            opset_version=17,
        )
    op_types = [n.op_type for n in onnx.load(str(path)).graph.node if n.op_type != "Constant"]
    assert op_types.count("LSTM") == 1 and "ReverseSequence" not in op_types
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    other, other_lengths, _ = batch(num_tokens=7, lengths=[7, 1, 3, 6])
    with torch.no_grad():
        want = node(other, other_lengths, batch_first=batch_first).numpy()
    (got,) = session.run(None, {"inputs": other.numpy(), "lengths": other_lengths.numpy()})
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-6


@pytest.mark.parametrize("backward", [False, True])
def test_the_dense_lm_layers_are_the_stacks(backward):
    """`_DenseLstmNodes` (time-major, each layer one node) against `forward_layers` or, for the
    backward LM, `run_backward`, with the layer masks, at real positions."""
    torch.manual_seed(2)
    stack = DenseLSTMStack(4, 3, 2).eval()
    layer_mask = torch.tensor([1.0, 0.5])
    nodes = _DenseLstmNodes(stack, layer_mask.tolist(), "reverse" if backward else "forward")
    inputs, lengths, mask = batch()
    with torch.no_grad():
        got = [layer.transpose(0, 1) for layer in nodes(inputs, lengths)]
        batch_first = inputs.transpose(0, 1)
        if backward:
            want = run_backward(stack, batch_first, mask, layer_mask, return_all_layers=True)
        else:
            want = stack.forward_layers(batch_first, mask, layer_mask)
    assert len(got) == len(want) == 3
    for a, b in zip(got, want):
        assert torch.allclose(a[mask], b[mask], atol=1e-6)
