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
from ldnet_allennlp.modules import run_backward
from tests.conftest import FIXTURES_ROOT

SENTENCES = [["The", "minister", "bought", "shares", "."], ["Oil", "rose", "."]]
LAYERS, INPUT, HIDDEN = 2, 8, 4  # as in fixtures/lm/allennlp_lm_dense_lstm.jsonnet
DENSE = INPUT + LAYERS * HIDDEN  # one direction's width


@pytest.fixture(scope="module")
def lm_archive(tmp_path_factory) -> str:
    params = Params.from_file(
        str(FIXTURES_ROOT / "lm" / "allennlp_lm_dense_lstm.jsonnet"),
        ext_vars={"LM_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt")},
    )
    directory = tmp_path_factory.mktemp("allennlp_lm") / "run"
    train_model(params, serialization_dir=str(directory))
    return str(directory / "model.tar.gz")


@pytest.fixture(scope="module")
def embedder(lm_archive):
    embedder = TokenEmbedder.from_params(
        Params({"type": "language_model_token_embedder", "archive_file": lm_archive})
    )
    return embedder.eval()


def character_ids(sentences):
    """`(batch_size, num_tokens, 50)` ELMo character ids, zero-padded."""
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


def by_hand(embedder, words, weights, gamma):
    """
    The embedder's output for one unpadded sentence, computed without the encoder's all-layers
    mode: `<S> words </S>` -> character embeddings `e` -> the two dense stacks' pieces; layer
    entry l = per direction `[x; h_1..h_l; 0]`; mix `gamma * sum_k weights[k] * entry_k` over
    `[e duplicated, entry_1, ..., entry_L]`; `<S>` and `</S>` dropped.  `(len(words), 2 * DENSE)`.
    """
    lm = embedder._lm
    # The ELMo indexer maps the strings "<S>" / "</S>" to its special bos / eos character ids.
    wrapped = character_ids([["<S>"] + words + ["</S>"]])
    embedded = lm._text_field_embedder({"token_characters": {"elmo_tokens": wrapped}})
    mask = torch.ones(wrapped.shape[:2], dtype=torch.bool)
    encoder = lm._contextualizer
    forward_pieces = encoder.forward_stack.forward_layers(embedded, mask)
    backward_pieces = run_backward(encoder.backward_stack, embedded, mask, return_all_layers=True)
    entries = [torch.cat([embedded] * (2 * DENSE // INPUT), dim=-1)]
    for layer in range(1, LAYERS + 1):
        halves = []
        for pieces in (forward_pieces, backward_pieces):
            kept = torch.cat(pieces[: layer + 1], dim=-1)
            halves += [kept, kept.new_zeros(*kept.shape[:-1], DENSE - kept.size(-1))]
        entries.append(torch.cat(halves, dim=-1))
    mixed = gamma * sum(weight * entry for weight, entry in zip(weights, entries))
    return mixed[0, 1:-1]


def test_language_model_token_embedder_reads_the_dense_lstm(embedder):
    lm = embedder._lm
    assert lm._contextualizer.return_all_layers
    assert lm._contextualizer.num_layers == LAYERS
    assert lm.num_layers() == LAYERS + 1
    assert embedder.get_output_dim() == lm._contextualizer.get_output_dim() == 2 * DENSE
    assert embedder._character_embedding_duplication_count == 2 * DENSE // INPUT

    # Distinct mixing weights, so that every entry (and its order) shows in the output.
    with torch.no_grad():
        scalars = torch.tensor([0.3, -0.5, 1.1])
        for scalar, value in zip(embedder._scalar_mix.scalar_parameters, scalars):
            scalar.fill_(value)
        embedder._scalar_mix.gamma.fill_(1.7)
    weights = torch.softmax(scalars, dim=0)

    ids = character_ids(SENTENCES)
    with torch.no_grad():
        output = embedder(ids)
        expected = [by_hand(embedder, words, weights, 1.7) for words in SENTENCES]
    assert output.shape == (2, 5, 2 * DENSE)
    torch.testing.assert_close(output[0], expected[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(output[1, :3], expected[1], rtol=1e-4, atol=1e-5)
    assert not output[1, 3:].any()  # padding


def test_all_layers_last_entry_is_what_the_lm_was_trained_on(embedder):
    # The LM run the way the embedder runs it (bos/eos added): the last all-layers entry equals
    # the ordinary `dense_lstm` output, i.e. what the LM's softmax was trained on.
    lm = embedder._lm
    ids = character_ids([["<S>"] + words + ["</S>"] for words in SENTENCES])
    source = {"token_characters": {"token_characters": ids}}
    with torch.no_grad():
        all_layers = lm(source)["lm_embeddings"]
        lm._contextualizer.return_all_layers = False
        try:
            top = lm(source)["lm_embeddings"]
        finally:
            lm._contextualizer.return_all_layers = True
    assert len(all_layers) == LAYERS
    assert all(entry.shape == top.shape == (2, 7, 2 * DENSE) for entry in all_layers)
    assert torch.equal(all_layers[-1], top)
