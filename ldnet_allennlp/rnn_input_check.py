"""
A guard against a silently wrong result on this stack (torch 2.14).

`torch.nn.LSTM` (and `GRU`, `RNN`) given a `PackedSequence` whose sequences all have the same
length does not check the size of its inputs: an encoder configured with the wrong `input_size`
runs and returns garbage. With sequences of different lengths the same mistake fails deep
inside torch ("mat1 and mat2 shapes cannot be multiplied"). AllenNLP packs every batch it gives
its torch-RNN encoders (`"lstm"`, `"gru"`, `"rnn"`, ... as `Seq2SeqEncoder`s and
`Seq2VecEncoder`s), and its `basic_classifier` does not compare its encoder's input size with the
embedder's output dim (its `crf_tagger` does), so a config such as
`training_configs/elmo/sst2_scalar_mix.jsonnet` with a wrong `seq2vec_encoder.input_size` trained
on garbage without a word.

`check_rnn_input_sizes()` (applied when `ldnet_allennlp` is imported; idempotent) makes those
AllenNLP wrappers raise a `ConfigurationError` naming `input_size` and both sizes on the first
batch instead. One integer comparison per call; nothing else changes.
"""

from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders.pytorch_seq2seq_wrapper import PytorchSeq2SeqWrapper
from allennlp.modules.seq2vec_encoders.pytorch_seq2vec_wrapper import PytorchSeq2VecWrapper


def check_rnn_input_sizes() -> None:
    for wrapper in (PytorchSeq2SeqWrapper, PytorchSeq2VecWrapper):
        if getattr(wrapper.forward, "_ldnet_checks_input_size", False):
            continue
        wrapper.forward = _checked(wrapper.forward)


def _checked(forward):
    def checked_forward(self, inputs, *args, **kwargs):
        expected = self.get_input_dim()
        if inputs.size(-1) != expected:
            raise ConfigurationError(
                f"{type(self).__name__} ({type(self._module).__name__}): its input_size is "
                f"{expected}, but its inputs have {inputs.size(-1)} features. Set the encoder's "
                f"input_size to {inputs.size(-1)} (the output dim of what feeds it, e.g. the "
                "text field embedder) in the config."
            )
        return forward(self, inputs, *args, **kwargs)

    checked_forward._ldnet_checks_input_size = True  # type: ignore[attr-defined]
    checked_forward.__doc__ = forward.__doc__
    return checked_forward
