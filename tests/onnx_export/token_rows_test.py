"""
`TokenRows`: the rows of every word-level input of a token, found with one dict lookup once the
token has been seen. The inputs it gives are exactly those of each indexer on its own, for words
in the tables and outside them, before and after its cache starts again; each token is looked
up by the indexers once. `GrowingRows` keeps the rows of new words without copying them all
again at each batch; `Tagger.forget_tokens` is a freshly loaded tagger.
"""

from pathlib import Path
from typing import List

import numpy as np

from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_runtime import Tagger
from ldnet_runtime.indexing import CharacterTableIndexer, GloveIndexer, GrowingRows, TokenRows
from tests.onnx_export.conftest import FIXTURE_ARCHIVES

SENTENCES = [
    ["Peter", "Blackburn", "visited", "Zxqwvblorf", "."],
    ["北京", "and", "EU", "rejects", "German", "call"],
    ["Ulaanbaatar-based", "🙂x", "Peter"],
]


def tagger(folder: Path) -> Tagger:
    export_tagger(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz"), str(folder))
    return Tagger(folder, threads=1)


def inputs_alone(tagger: Tagger, sentences: List[List[str]]) -> dict:
    num_tokens = max(map(len, sentences))
    return {name: indexer(sentences, num_tokens) for name, indexer in tagger._indexers}


def inputs_by_rows(tagger: Tagger, sentences: List[List[str]]) -> dict:
    num_tokens = max(map(len, sentences))
    rows = tagger._token_rows([token for sentence in sentences for token in sentence])
    indexers = [(n, i) for n, i in tagger._indexers if n in tagger._word_level]
    return {
        name: indexer.gather(rows[:, column], sentences, num_tokens)
        for column, (name, indexer) in enumerate(indexers)
    }


def test_the_rows_give_each_indexers_own_inputs(tmp_path):
    runtime = tagger(tmp_path / "export")
    assert len(runtime._word_level) == len(runtime._indexers) >= 3
    for sentences in (SENTENCES, SENTENCES[:1], [SENTENCES[2], SENTENCES[0]]):
        by_rows, alone = inputs_by_rows(runtime, sentences), inputs_alone(runtime, sentences)
        assert by_rows.keys() == alone.keys()
        for name in alone:
            assert by_rows[name].dtype == alone[name].dtype
            assert np.array_equal(by_rows[name], alone[name]), name


def test_each_token_is_looked_up_by_the_indexers_once(tmp_path):
    runtime = tagger(tmp_path / "export")
    looked_up: List[str] = []
    for indexer in runtime._token_rows.indexers:

        def counting(tokens, token_rows=indexer.token_rows):
            looked_up.extend(tokens)
            return token_rows(tokens)

        indexer.token_rows = counting
    first = runtime.tag_tokens(SENTENCES)
    distinct = {token for sentence in SENTENCES for token in sentence}
    assert sorted(looked_up) == sorted(list(distinct) * len(runtime._token_rows.indexers))
    assert runtime.tag_tokens(SENTENCES + [["Peter", "EU"]]) == first + [
        runtime.tag_tokens([["Peter", "EU"]])[0]
    ]
    assert len(looked_up) == len(distinct) * len(runtime._token_rows.indexers)


def test_the_cache_starts_again_with_the_indexers(tmp_path, monkeypatch):
    runtime = tagger(tmp_path / "export")
    fresh = tagger(tmp_path / "fresh")
    monkeypatch.setattr(TokenRows, "CACHE_SIZE", 12)
    (characters,) = [i for _, i in runtime._indexers if isinstance(i, CharacterTableIndexer)]
    words = [f"Qzx{i}vv" for i in range(40)] + ["Peter", "EU", "北京"]
    batches = [words[i : i + 5] for i in range(0, len(words), 5)]
    for batch in batches + batches[::-1]:
        assert len(runtime._token_rows._index) <= 12
        assert characters.vectors.used <= characters.vectors.kept + 12
        alone = inputs_alone(fresh, [batch])
        by_rows = inputs_by_rows(runtime, [batch])
        for name in alone:
            assert np.array_equal(by_rows[name], alone[name]), name
    assert runtime.tag_tokens(batches) == fresh.tag_tokens(batches)


def test_growing_rows_keep_what_was_added_and_forget_back_to_the_table():
    """`GrowingRows`: rows added one batch after another are where `add` says, the array
    grows by doubling (not at every batch), and `forget` goes back to the first rows."""
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    rows = GrowingRows(table)
    firsts, sizes = [], set()
    for i in range(600):
        firsts.append(rows.add(np.full((5, 2), i, dtype=np.float32)))
        sizes.add(len(rows.rows))
    assert firsts == [3 + 5 * i for i in range(600)] and rows.used == 3 + 3000
    assert np.array_equal(rows.rows[:3], table)
    assert np.array_equal(rows.rows[3 + 5 * 17 : 3 + 5 * 18], np.full((5, 2), 17))
    assert len(sizes) <= 4  # 3 + 1024, + 2048, + 4096: not one copy per batch
    rows.forget()
    assert rows.used == 3 and rows.add(np.ones((1, 2), dtype=np.float32)) == 3
    assert np.array_equal(rows.rows[:3], table)


def test_forget_tokens_gives_a_freshly_loaded_taggers_state(tmp_path):
    runtime = tagger(tmp_path / "export")
    (characters,) = [i for _, i in runtime._indexers if isinstance(i, CharacterTableIndexer)]
    assert characters.vectors.kept == characters.table_rows + 1  # and a row of zeros
    runtime.tag_tokens(SENTENCES)
    assert characters.vectors.used > characters.vectors.kept  # words outside the table kept
    runtime.forget_tokens()
    assert characters.vectors.used == characters.vectors.kept
    assert runtime._token_rows._index == {}
    assert runtime.tag_tokens(SENTENCES) == tagger(tmp_path / "fresh").tag_tokens(SENTENCES)


def test_the_glove_rows_keep_glove_vectors_and_are_forgotten(glove_tagger):
    """`GloveIndexer` keeps each new token's vector once (the unknown vector for a word GloVe
    lacks, zeros at padding): a padded batch's input is `GloveLookup.vectors`' own."""
    runtime = Tagger(glove_tagger["export"], threads=1)
    ((name, glove),) = [(n, i) for n, i in runtime._indexers if isinstance(i, GloveIndexer)]
    assert glove.vectors.kept == 2  # zeros, then the unknown vector
    sentences = [["Zanzibar", "Qqxzvw", "the"], ["The"], ["Qqxzvw", "Zanzibar"]]
    got = inputs_by_rows(runtime, sentences)[name]
    assert np.array_equal(got, glove.lookup.vectors(sentences, 3))
    assert np.array_equal(got[1, 0], glove.lookup.matrix[glove.lookup.rows(["the"])[0]])
    assert np.array_equal(got[0, 1], glove.lookup.unknown_vector) and not got[1, 1:].any()
    assert glove.vectors.used == 2 + 3  # Zanzibar, the, The: one kept row each
    runtime.forget_tokens()
    assert glove.vectors.used == 2 and runtime._token_rows._index == {}
    assert np.array_equal(inputs_by_rows(runtime, sentences[1:])[name][0, 0], got[1, 0])
