"""
`dense_lstm` as the contextualizer of allennlp-models' `language_model`, consumed by
allennlp-models' `language_model_token_embedder` (which reloads the archive with
`return_all_layers` and scalar-mixes the layers).
"""

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import ELMoTokenCharactersIndexer
from allennlp.modules.token_embedders import TokenEmbedder

import allennlp_models.lm  # noqa: F401  (registers language_model and its embedder)
from tests.conftest import FIXTURES_ROOT

SENTENCES = [["The", "minister", "bought", "shares", "."], ["Oil", "rose", "."]]
LAYERS, INPUT, HIDDEN = 2, 8, 4


@pytest.fixture(scope="module")
def lm_archive(tmp_path_factory) -> str:
    params = Params.from_file(
        str(FIXTURES_ROOT / "lm" / "allennlp_lm_dense_lstm.jsonnet"),
        ext_vars={"LM_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt")},
    )
    directory = tmp_path_factory.mktemp("allennlp_lm") / "run"
    train_model(params, serialization_dir=str(directory))
    return str(directory / "model.tar.gz")


def character_ids(sentences):
    indexer = ELMoTokenCharactersIndexer()
    rows = [
        indexer.tokens_to_indices([Token(word) for word in words], Vocabulary())["elmo_tokens"]
        for words in sentences
    ]
    longest = max(len(row) for row in rows)
    ids = torch.zeros(len(rows), longest, 50, dtype=torch.long)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = torch.tensor(row)
    return ids


def test_language_model_token_embedder_reads_the_dense_lstm(lm_archive):
    embedder = TokenEmbedder.from_params(
        Params({"type": "language_model_token_embedder", "archive_file": lm_archive})
    )
    embedder.eval()
    lm = embedder._lm
    assert lm._contextualizer.return_all_layers
    assert lm.num_layers() == LAYERS + 1
    dense = 2 * (INPUT + LAYERS * HIDDEN)
    assert embedder.get_output_dim() == dense

    # put all the scalar mix's weight on the last layer (the ordinary dense output), gamma 1
    with torch.no_grad():
        for index, scalar in enumerate(embedder._scalar_mix.scalar_parameters):
            scalar.fill_(1e4 if index == LAYERS else -1e4)
        embedder._scalar_mix.gamma.fill_(1.0)
    ids = character_ids(SENTENCES)
    with torch.no_grad():
        output = embedder(ids)
        assert output.shape == (2, 5, dense)

        # the same by hand: characters -> <S> w_1 .. w_n </S> -> the ordinary dense_lstm output
        expected = []
        for words in SENTENCES:
            wrapped = character_ids([["<S>"] + words + ["</S>"]])
            embedded = lm._text_field_embedder({"token_characters": {"elmo_tokens": wrapped}})
            mask = torch.ones(wrapped.shape[:2], dtype=torch.bool)
            lm._contextualizer.return_all_layers = False
            try:
                contextual = lm._contextualizer(embedded, mask)
            finally:
                lm._contextualizer.return_all_layers = True
            expected.append(contextual[0, 1:-1])
    torch.testing.assert_close(output[0], expected[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(output[1, :3], expected[1], rtol=1e-4, atol=1e-5)
    assert not output[1, 3:].any()  # padding
