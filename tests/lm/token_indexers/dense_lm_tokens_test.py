"""The `dense_lm_tokens` indexer: ids in the dense LMs' own vocabulary, with or without a model."""

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer
from allennlp.models.archival import load_archive

from ldnet_allennlp.lm.token_embedders import LayerSelectionTokenEmbedder
from ldnet_allennlp.lm.token_indexers import DenseLMTokenIndexer
from tests.lm.lm_archives import fixture_lm_archives

WORDS = ["The", "the", "Zürich", "🙂"]


@pytest.fixture(scope="module")
def archives():
    return fixture_lm_archives()


def test_indexer_uses_the_lm_vocabulary_and_its_oov_id(archives):
    vocab = Vocabulary()
    LayerSelectionTokenEmbedder(archives["forward"], archives["backward"], vocab=vocab)
    lm_vocab = load_archive(archives["forward"]).model.vocab
    assert vocab.get_token_to_index_vocabulary(
        "lm_tokens"
    ) == lm_vocab.get_token_to_index_vocabulary("tokens")
    ids = DenseLMTokenIndexer().tokens_to_indices([Token(w) for w in WORDS], vocab)["tokens"]
    assert ids[0] == lm_vocab.get_token_index("The", "tokens") > 1
    assert ids[2] == ids[3] == lm_vocab.get_token_index("@@UNKNOWN@@", "tokens") == 1
    # the indexer never adds data words to the LM namespace
    counter = {"lm_tokens": {}}
    DenseLMTokenIndexer().count_vocab_items(Token("Zürich"), counter)
    assert counter == {"lm_tokens": {}}


def test_with_lm_archive_it_needs_no_model(archives):
    """Indexing before (or without) building a model: the words come from the LM archive."""
    indexer = TokenIndexer.from_params(
        Params({"type": "dense_lm_tokens", "lm_archive": archives["backward"]})
    )
    vocab = Vocabulary()  # what a reader-only pipeline has: nothing copied in by an embedder
    ids = indexer.tokens_to_indices([Token(w) for w in WORDS], vocab)["tokens"]
    lm_vocab = load_archive(archives["forward"]).model.vocab
    assert ids == [lm_vocab.get_token_index(w, "tokens") for w in WORDS]
    # the same ids as through the namespace the embedder fills
    LayerSelectionTokenEmbedder(archives["forward"], archives["backward"], vocab=vocab)
    assert indexer.tokens_to_indices([Token(w) for w in WORDS], vocab)["tokens"] == ids


def test_without_lm_archive_or_model_is_an_error():
    with pytest.raises(ConfigurationError, match="lm_archive.*layer_selection"):
        DenseLMTokenIndexer().tokens_to_indices([Token("x")], Vocabulary())
