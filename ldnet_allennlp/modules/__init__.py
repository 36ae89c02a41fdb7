"""
Shared nn modules: the dense LSTM stack (once) and its `Seq2SeqEncoder` wrapper; the batched
Viterbi decoder (`viterbi`) and the CRF that uses it (`viterbi_crf`).
"""

from ldnet_allennlp.modules.dense_lstm import (  # noqa: F401
    DenseLSTMStack,
    reverse_padded_sequence,
    run_backward,
)
from ldnet_allennlp.modules.dense_lstm_encoder import DenseLSTMEncoder  # noqa: F401
