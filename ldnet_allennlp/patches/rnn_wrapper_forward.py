"""
**Replaces**: `forward` of AllenNLP's `PytorchSeq2SeqWrapper` and `PytorchSeq2VecWrapper` (every
`"lstm"`, `"gru"`, `"rnn"`, ... `Seq2SeqEncoder` / `Seq2VecEncoder`), with the same `forward`
after one integer comparison.

**Why**: torch 2.14's `LSTM` (and `GRU`, `RNN`) given a `PackedSequence` whose sequences all have
the same length does not check the width of its inputs: an encoder configured with the wrong
`input_size` runs and returns garbage. With sequences of different lengths the same mistake fails
deep inside torch ("mat1 and mat2 shapes cannot be multiplied"). AllenNLP packs every batch it
gives these wrappers, and its `basic_classifier` does not compare its encoder's input size with
the embedder's output dim (its `crf_tagger` does), so a config such as
`training_configs/elmo/sst2_scalar_mix.jsonnet` with a wrong `seq2vec_encoder.input_size` trained
on garbage without a word. With this patch the wrappers raise a `ConfigurationError` naming
`input_size` and both sizes at the first batch.

**Targets**: AllenNLP 2.10.1 on torch 2.14.1.
**Remove when**: torch checks a packed batch's width (try
`tests/patches/rnn_wrapper_forward_test.py` without it).
**Test**: `tests/patches/rnn_wrapper_forward_test.py`.
"""

from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders.pytorch_seq2seq_wrapper import PytorchSeq2SeqWrapper
from allennlp.modules.seq2vec_encoders.pytorch_seq2vec_wrapper import PytorchSeq2VecWrapper


def apply() -> None:
    """Idempotent: a wrapper's `forward` that already checks is left as it is."""
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
