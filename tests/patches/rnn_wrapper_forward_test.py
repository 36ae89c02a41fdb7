"""`ldnet_allennlp.patches.rnn_wrapper_forward`: AllenNLP's RNN encoders check `input_size`."""

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules import Seq2SeqEncoder, Seq2VecEncoder

import ldnet_allennlp  # noqa: F401  (applies the patches)


def test_still_needed_torch_runs_a_packed_batch_of_the_wrong_width():
    lstm = torch.nn.LSTM(3, 4, batch_first=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.randn(2, 5, 7), [5, 5], batch_first=True)
    lstm(packed)  # 7 features into an LSTM of input_size 3: no error from torch 2.14


@pytest.mark.parametrize("lengths", [[4, 4], [4, 3]], ids=["equal-lengths", "unequal-lengths"])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("encoder", [Seq2SeqEncoder, Seq2VecEncoder])
def test_torch_rnn_encoder_given_the_wrong_input_size(encoder, kind, lengths):
    """
    Without the patch, torch 2.14 returns garbage for equal lengths (a packed batch) and fails
    with "mat1 and mat2 shapes cannot be multiplied" for unequal ones.
    """
    module = encoder.from_params(Params({"type": kind, "input_size": 7, "hidden_size": 5}))
    mask = torch.arange(4)[None, :] < torch.tensor(lengths)[:, None]
    with pytest.raises(ConfigurationError, match="its input_size is 7, but its inputs have 62"):
        module(torch.randn(2, 4, 62), mask)


@pytest.mark.parametrize("encoder", [Seq2SeqEncoder, Seq2VecEncoder])
def test_the_right_input_size_runs_as_before(encoder):
    module = encoder.from_params(Params({"type": "lstm", "input_size": 7, "hidden_size": 5}))
    output = module(torch.randn(2, 4, 7), torch.ones(2, 4, dtype=torch.bool))
    assert output.size(-1) == 5
