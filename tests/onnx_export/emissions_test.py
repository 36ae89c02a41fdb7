"""
The traceable forms in `onnx_export/emissions.py` against the code they rewrite: `_OnnxLstm`
(one ONNX `LSTM` node with the sentences' lengths) in eager mode against torch's LSTMs on
packed sequences, and its exported node on onnxruntime against eager mode, in each direction,
padding included, from zero states or from given ones; the dense LM's time-major layers
(`_DenseLstmNodes`, the backward one right to left) against `DenseLSTMStack.forward_layers` and
`dense_lstm.run_backward`, and started after a sentence boundary (`start_after`) against the
stacks run with the boundary in the input.
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
def test_given_initial_states_are_torchs_packed_lstm_from_them(direction):
    """`start_from`: every sentence starts from the same given states, as torch's LSTM given
    them expanded over the batch."""
    node, lstm = node_of(direction)
    directions = 2 if direction == "bidirectional" else 1
    torch.manual_seed(3)
    h, c = torch.randn(directions, 1, 3), torch.randn(directions, 1, 3)
    node.start_from(h, c)
    inputs, lengths, mask = batch()
    if direction == "reverse":  # the reverse half of a bidirectional LSTM: its states second
        h, c = torch.cat([torch.zeros_like(h), h]), torch.cat([torch.zeros_like(c), c])
    states = (h.expand(-1, len(LENGTHS), -1).contiguous(), c.expand(-1, len(LENGTHS), -1))
    with torch.no_grad():
        got = node(inputs, lengths)
        packed = pack_padded_sequence(inputs, lengths, enforce_sorted=False)
        want = lstm(packed, (states[0], states[1].contiguous()))[0]
        want = pad_packed_sequence(want, total_length=inputs.size(0))[0]
        from_zeros = node_of(direction)[0](inputs, lengths)
    if direction == "reverse":
        want = want[..., 3:]
    assert torch.allclose(got, want, atol=1e-6)
    assert not torch.allclose(got[mask.t()], from_zeros[mask.t()], atol=1e-3)
    assert not got[~mask.t()].any()


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("initial_states", [False, True])
def test_the_exported_node_runs_as_in_eager_mode(direction, batch_first, initial_states, tmp_path):
    """One `LSTM` node (plus a squeeze or a transpose and a reshape, and with initial states an
    `Expand` of each over the batch) whose outputs on onnxruntime are the eager ones, at
    another batch and length than traced with."""
    node, _ = node_of(direction)
    if initial_states:
        torch.manual_seed(4)
        directions = 2 if direction == "bidirectional" else 1
        node.start_from(torch.randn(directions, 1, 3), torch.randn(directions, 1, 3))

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
    assert op_types.count("Expand") == (2 if initial_states else 0)
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


@pytest.mark.parametrize("backward", [False, True])
def test_starting_after_the_boundary_is_reading_it_first(backward):
    """`start_after(boundary)`: the layers over the tokens alone, from the states that reading
    `boundary` leaves, are the layers over the tokens with the boundary read first (before the
    first token for the forward LM, after each sentence's last token for the backward LM, which
    reads it first), at the tokens' positions; with a layer mask, so that the second layer
    reads the first one's output scaled by `z`."""
    torch.manual_seed(5)
    stack = DenseLSTMStack(4, 3, 2).eval()
    layer_mask = [1.0, 0.5]
    direction = "reverse" if backward else "forward"
    nodes = _DenseLstmNodes(stack, layer_mask, direction)
    started = _DenseLstmNodes(stack, layer_mask, direction)
    boundary = torch.randn(4)
    started.start_after(boundary)
    inputs, lengths, mask = batch()
    with_boundary = torch.zeros(inputs.size(0) + 1, len(LENGTHS), 4)
    for b, length in enumerate(LENGTHS):
        if backward:
            with_boundary[:length, b] = inputs[:length, b]
            with_boundary[length, b] = boundary
        else:
            with_boundary[0, b] = boundary
            with_boundary[1 : length + 1, b] = inputs[:length, b]
    with torch.no_grad():
        got = started(inputs, lengths)
        read = nodes(with_boundary, lengths + 1)
    for layer, (a, b) in enumerate(zip(got[1:], read[1:])):
        for sentence, length in enumerate(LENGTHS):
            tokens = b[:length, sentence] if backward else b[1 : length + 1, sentence]
            assert torch.allclose(a[:length, sentence], tokens, atol=1e-6), (layer, sentence)
            assert not a[length:, sentence].any()
