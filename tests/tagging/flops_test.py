import pytest
import torch

from allennlp.modules import TimeDistributed
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder
from allennlp.modules.seq2vec_encoders import CnnEncoder
from allennlp.modules.token_embedders import Embedding, TokenCharactersEncoder

from ldnet_allennlp.tagging.flops import flops_breakdown, flops_per_token


class TinyTagger(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        characters = Embedding(embedding_dim=2, num_embeddings=10)
        cnn = CnnEncoder(embedding_dim=2, num_filters=3, ngram_filter_sizes=(2,))
        self.chars = TokenCharactersEncoder(characters, cnn)
        self.encoder = LstmSeq2SeqEncoder(input_size=3, hidden_size=2, bidirectional=True)
        self.tag_projection_layer = TimeDistributed(torch.nn.Linear(4, 5))


def test_hand_count():
    model = TinyTagger()
    parts = flops_breakdown(model, chars_per_token=5.0)
    # BiLSTM 3 -> 2: per direction 4·2·(3 + 2) = 40
    assert parts["word_encoder"] == 80
    # emissions 4 -> 5
    assert parts["crf_emissions"] == 20
    # char CNN: 3 filters · 2 dims · width 2 = 12 per character position, 5 characters
    assert parts["char_encoder"] == pytest.approx(60)
    assert parts["lm"] == parts["lm_projection"] == parts["other"] == 0
    assert flops_per_token(model, chars_per_token=5.0) == pytest.approx(160)
