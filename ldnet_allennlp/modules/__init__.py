"""
Shared nn modules: the dense LSTM stack (once) and its `Seq2SeqEncoder` wrapper. (The batched
Viterbi decoder and the CRF that uses it are the taggers' own: `ldnet_allennlp/tagging/`.)
"""

from ldnet_allennlp.modules.dense_lstm import (  # noqa: F401
    DenseLSTMStack,
    reverse_padded_sequence,
    run_backward,
)
from ldnet_allennlp.modules.dense_lstm_encoder import DenseLSTMEncoder  # noqa: F401
