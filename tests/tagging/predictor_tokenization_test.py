"""
The `ldnet_tagger` predictor splits raw text with spaCy's tokenizer alone when its indexers read
only the words' text: the same tokens (text and offsets) as AllenNLP's `SpacyTokenizer` with the
whole pipeline; an indexer that reads POS tags gets the whole pipeline.
"""

import pytest

from allennlp.data.token_indexers import SingleIdTokenIndexer
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor import SPACY_MODEL
from tests.conftest import FIXTURES_ROOT

SENTENCES = [
    "Chancellor Helmut Kohl met Jacques Chirac in Bonn.",
    "Mr. O'Neil's U.S.-based co-op paid $3.5bn on 1/2/2020, didn't he?",
    "  Spaces   and\ttabs\nand new lines  ",
    "E-mail j.doe@example.com or see https://example.org/a?b=c (p. 12).",
    "Zürich, São Paulo and Kraków — «quoted» … 10km/h!",
    "",
]


@pytest.fixture(scope="module")
def predictor():
    archive = load_archive(str(FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"))
    return Predictor.from_archive(archive, "ldnet_tagger")


def test_words_only_gives_the_tokens_of_the_whole_pipeline(predictor):
    assert predictor._words_only
    full = SpacyTokenizer(language=SPACY_MODEL)
    for sentence in SENTENCES:
        expected = [(t.text, t.idx, t.idx_end) for t in full.tokenize(sentence)]
        assert [(t.text, t.idx, t.idx_end) for t in predictor._split(sentence)] == expected


def test_an_indexer_that_reads_pos_tags_gets_the_whole_pipeline(predictor):
    reader = predictor._dataset_reader
    original = dict(reader._token_indexers)
    try:
        reader._token_indexers["pos"] = SingleIdTokenIndexer(namespace="pos", feature_name="pos_")
        pos_predictor = Predictor.by_name("ldnet_tagger")(predictor._model, reader)
        assert not pos_predictor._words_only
        token, *_ = pos_predictor._split("Kohl met Chirac.")
        assert token.pos_ == "PROPN"
    finally:
        reader._token_indexers.clear()
        reader._token_indexers.update(original)
