"""
`flops_breakdown` / `flops_per_token` against counts worked out by hand on tiny models.

LSTM convention (`ldnet_allennlp/tagging/flops.py`): per layer and direction, 4h·(d + h) for the
matrix products plus 8 per hidden unit for the gates' element-wise work (σ i, σ f, σ o, tanh g,
tanh c: 5; c = f⊙c + i⊙g: 2; h = o⊙tanh c: 1). Viterbi: num_tags² per token.
"""

import pytest
import torch

from allennlp.models.archival import load_archive
from allennlp.modules import ConditionalRandomField, TimeDistributed
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder
from allennlp.modules.seq2vec_encoders import CnnEncoder, LstmSeq2VecEncoder
from allennlp.modules.token_embedders import Embedding, TokenCharactersEncoder

from ldnet_allennlp.tagging.flops import flops_breakdown, flops_per_token
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT


class TinyTagger(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        characters = Embedding(embedding_dim=2, num_embeddings=10)
        cnn = CnnEncoder(embedding_dim=2, num_filters=3, ngram_filter_sizes=(2,))
        self.chars = TokenCharactersEncoder(characters, cnn)
        self.encoder = LstmSeq2SeqEncoder(input_size=3, hidden_size=2, bidirectional=True)
        self.tag_projection_layer = TimeDistributed(torch.nn.Linear(4, 5))


class TinyLstmCharsCrfTagger(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        characters = Embedding(embedding_dim=2, num_embeddings=10)
        self.chars = TokenCharactersEncoder(characters, LstmSeq2VecEncoder(2, 3))
        self.encoder = LstmSeq2SeqEncoder(input_size=3, hidden_size=2, num_layers=2)
        self.tag_projection_layer = TimeDistributed(torch.nn.Linear(2, 5))
        self.crf = ConditionalRandomField(5)


def test_hand_count():
    model = TinyTagger()
    parts = flops_breakdown(model, chars_per_token=5.0)
    # BiLSTM 3 -> 2, per direction: matrices 4·2·(3 + 2) = 40, gates 8 per unit · 2 units = 16
    assert parts["word_encoder"] == 2 * (40 + 16) == 112
    # emissions 4 -> 5
    assert parts["crf_emissions"] == 20
    # char CNN: 3 filters · 2 dims · width 2 = 12 per character position, 5 characters
    assert parts["char_encoder"] == pytest.approx(60)
    assert parts["lm"] == parts["lm_projection"] == parts["viterbi"] == parts["other"] == 0
    assert flops_per_token(model, chars_per_token=5.0) == pytest.approx(112 + 20 + 60)


def test_hand_count_with_a_char_lstm_and_a_crf():
    model = TinyLstmCharsCrfTagger()
    parts = flops_breakdown(model, chars_per_token=5.0)
    # char LSTM 2 -> 3, once per character: 4·3·(2 + 3) = 60, gates 8 · 3 = 24; 5 characters
    assert parts["char_encoder"] == pytest.approx(5 * (60 + 24)) == 420
    # 2-layer LSTM: 3 -> 2, 4·2·(3 + 2) = 40; 2 -> 2, 4·2·(2 + 2) = 32; gates 8 · 2 per layer
    assert parts["word_encoder"] == 40 + 32 + 2 * 16 == 104
    assert parts["crf_emissions"] == 2 * 5 == 10
    # Viterbi over 5 tags: 5² add-and-max per token
    assert parts["viterbi"] == 25
    assert parts["lm"] == parts["lm_projection"] == parts["other"] == 0
    assert flops_per_token(model, chars_per_token=5.0) == pytest.approx(420 + 104 + 10 + 25)


@pytest.mark.parametrize("name, lm_layers", [("ner_ldnet", 3), ("ner_ldnet_pruned", 2)])
def test_hand_count_of_the_fixture_ldnet_taggers(name, lm_layers, monkeypatch):
    # The LD-Net fixture taggers: dense LMs of 4-unit layers over 6-d words (all 3 layers in
    # both directions, or 2 after pruning), W_cr to 8, a char CNN of 6 filters of width 3 over
    # 4-d characters, a BiLSTM 22 -> 8 and 14 tags.
    monkeypatch.chdir(PROJECT_ROOT)
    model = load_archive(str(FIXTURES_ROOT / "archives" / f"{name}.tar.gz")).model
    lm_lstms = [
        m for n, m in model.named_modules() if ".bilm." in n and isinstance(m, torch.nn.LSTM)
    ]
    assert [(m.input_size, m.hidden_size) for m in lm_lstms] == 2 * [
        (6 + 4 * layer, 4) for layer in range(lm_layers)
    ]
    parts = flops_breakdown(model, chars_per_token=5.0)
    # Layer l (0-based) reads 6 + 4l: 4·4·(6 + 4l + 4), plus gates 8 · 4 = 32.
    per_direction = {3: (160 + 32) + (224 + 32) + (288 + 32), 2: (160 + 32) + (224 + 32)}
    assert parts["lm"] == 2 * per_direction[lm_layers]  # 1536 or 896
    # W_cr reads the 2 directions' words and layers: 2 · (6 + 4 · layers) -> 8
    assert parts["lm_projection"] == 2 * (6 + 4 * lm_layers) * 8
    assert parts["char_encoder"] == pytest.approx(5 * 6 * 4 * 3)  # 360
    # BiLSTM 22 -> 8: per direction 4·8·(22 + 8) = 960, gates 8 · 8 = 64
    assert parts["word_encoder"] == 2 * (960 + 64) == 2048
    assert parts["crf_emissions"] == 16 * 14
    assert parts["viterbi"] == 14**2 == 196
    assert parts["other"] == 0
    assert flops_per_token(model, chars_per_token=5.0) == pytest.approx(sum(parts.values()))
