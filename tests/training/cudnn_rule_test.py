"""
cuDNN's rule for RNNs, enforced on the CPU for the whole suite (`tests/cudnn_rule.py`), and the
dense LSTM stacks under it: in eval mode with a graph (frozen LMs under trained layer masks, or
fine-tuned LMs) their LSTMs run in training mode, which must change no number. The training
configs themselves train under the rule in `tests/configs_test.py`,
`tests/distillation/classification/configs_test.py` and
`tests/distillation/tagging/pruned_student_test.py`.
"""

import json

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.params import with_overrides

from ldnet_allennlp.modules.dense_lstm import DenseLSTMStack, run_backward
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.cudnn_rule import CUDNN_MESSAGE, rule_suspended
from tests.lm.lm_archives import lm_archive_ext_vars


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_the_suite_refuses_backward_through_an_rnn_in_eval_mode(cls):
    rnn = cls(3, 2, batch_first=True).eval()
    inputs = torch.randn(2, 4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=CUDNN_MESSAGE):
        rnn(inputs)[0].sum().backward()
    packed = pack_padded_sequence(inputs, torch.tensor([4, 2]), batch_first=True)
    with pytest.raises(RuntimeError, match=CUDNN_MESSAGE):
        rnn(packed)[0].data.sum().backward()
    # the final state alone needs the backward too
    final_state = rnn(inputs)[1]
    final_state = final_state[0] if cls is torch.nn.LSTM else final_state
    with pytest.raises(RuntimeError, match=CUDNN_MESSAGE):
        final_state.sum().backward()


def test_the_rule_allows_training_mode_no_grad_and_frozen_rnns():
    lstm = torch.nn.LSTM(3, 2, batch_first=True)
    inputs = torch.randn(2, 4, 3, requires_grad=True)
    lstm(inputs)[0].sum().backward()  # training mode
    assert inputs.grad is not None
    lstm.eval()
    with torch.no_grad():
        lstm(inputs)
    for parameter in lstm.parameters():
        parameter.requires_grad_(False)
    output = lstm(inputs.detach())[0]  # nothing for a gradient to reach
    assert not output.requires_grad
    with rule_suspended():
        lstm.requires_grad_(True)
        lstm(inputs)[0].sum().backward()  # the CPU's own behaviour


def _stack_outputs_and_grads(stack, inputs, mask, layer_mask, backward: bool):
    inputs = inputs.clone().requires_grad_(True)
    layer_mask = layer_mask.clone().requires_grad_(True)
    if backward:
        pieces = run_backward(stack, inputs, mask, layer_mask, return_all_layers=True)
    else:
        pieces = stack.forward_layers(inputs, mask, layer_mask)
    output = torch.cat(pieces, dim=-1)
    (output * torch.linspace(-1, 1, output.size(-1))).sum().backward()
    weight_grads = [p.grad.clone() for p in stack.parameters()]
    stack.zero_grad()
    return output.detach(), inputs.grad, layer_mask.grad, weight_grads


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_an_eval_mode_stack_backpropagates_with_the_numbers_of_its_lstms_in_eval_mode(
    backward, monkeypatch
):
    torch.manual_seed(0)
    stack = DenseLSTMStack(4, 3, 3, dropout=0.5, layer_dropout=0.5).eval()
    inputs = torch.randn(3, 5, 4)
    mask = torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] + [0] * 4], dtype=torch.bool)
    layer_mask = torch.tensor([1.0, 0.5, 0.0])

    now = _stack_outputs_and_grads(stack, inputs, mask, layer_mask, backward)
    assert not any(lstm.training for lstm in stack.layers)  # the mode is for the call only

    # before: the LSTMs stayed in eval mode, which only the CPU allows
    monkeypatch.setattr(DenseLSTMStack, "_autograd_reaches_layers", lambda *args: False)
    with rule_suspended():
        before = _stack_outputs_and_grads(stack, inputs, mask, layer_mask, backward)
    assert torch.equal(now[0], before[0])
    assert torch.equal(now[1], before[1])
    assert torch.equal(now[2], before[2])
    assert all(torch.equal(a, b) for a, b in zip(now[3], before[3]))
    assert now[2].abs().sum() > 0  # the layer masks do get a gradient through the LSTMs


def _train(config: str, directory, ext_vars, overrides):
    params = Params.from_file(str(CONFIGS_ROOT / "tagging" / config), ext_vars=ext_vars)
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    train_model(params, serialization_dir=str(directory))
    return directory


@pytest.fixture(scope="module")
def pruning_ext_vars(tmp_path_factory):
    """The fixture data, LMs and a phase-1 NER tagger (1 epoch), for `ner_ldnet_prune`."""
    dev = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
    ext_vars = {
        "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
        "CONLL03_DEV_DATA_PATH": dev,
        "CONLL03_TEST_DATA_PATH": dev,
        **lm_archive_ext_vars(),
    }
    phase1 = tmp_path_factory.mktemp("phase1")
    _train("ner_ldnet.jsonnet", phase1, ext_vars, {"trainer.num_epochs": 1})
    return {**ext_vars, "NER_LDNET_PHASE1_DIR": str(phase1)}


def test_a_pruning_run_is_the_one_it_was_with_the_lms_lstms_in_eval_mode(
    pruning_ext_vars, tmp_path, monkeypatch
):
    """The fixture pruning run, under the rule, against the same run as it was before (LSTMs
    in eval mode, the rule suspended): the same weights, masks and metrics."""
    overrides = {"trainer.num_epochs": 2}
    now = _train("ner_ldnet_prune.jsonnet", tmp_path / "now", pruning_ext_vars, overrides)
    monkeypatch.setattr(DenseLSTMStack, "_autograd_reaches_layers", lambda *args: False)
    with rule_suspended():
        before = _train("ner_ldnet_prune.jsonnet", tmp_path / "before", pruning_ext_vars, overrides)

    weights_now = torch.load(now / "best.th")
    weights_before = torch.load(before / "best.th")
    assert weights_now.keys() == weights_before.keys()
    for name in weights_now:
        assert torch.equal(weights_now[name], weights_before[name]), name
    masks = [name for name in weights_now if name.endswith("layer_mask")]
    assert masks and not torch.equal(weights_now[masks[0]], torch.ones_like(weights_now[masks[0]]))

    def metrics(run):
        values = json.loads((run / "metrics.json").read_text())
        return {k: v for k, v in values.items() if "duration" not in k and "memory" not in k}

    assert metrics(now) == metrics(before)


def test_pruning_with_the_lms_lstms_in_eval_mode_crashes_and_says_so(
    pruning_ext_vars, tmp_path, monkeypatch
):
    """What a GPU did before the fix, on the CPU: the first backward raises cuDNN's error, and
    the pruning callback reports a stopped run, not an unfinished pruning."""
    monkeypatch.setattr(DenseLSTMStack, "_autograd_reaches_layers", lambda *args: False)
    with pytest.raises(RuntimeError, match=CUDNN_MESSAGE):
        _train("ner_ldnet_prune.jsonnet", tmp_path / "run", pruning_ext_vars, {})
    log = (tmp_path / "run" / "out.log").read_text()
    assert "layer_pruning: training stopped by RuntimeError after 0 epochs" in log
    assert "training ended with" not in log
