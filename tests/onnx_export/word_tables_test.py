"""
Word tables (`export_tagger(..., word_tables=True)`, the default): what depends on the word alone
is looked up instead of computed, and the emissions are the network's. Every word of every table
(the fixtures' pruned tagger, and the shipped `ner_pruned` where it is here) is tagged in
sentences by an export with tables and by one whose graph computes everything; their emissions
agree, as do each character-table row and the character CNN run on its word alone. Words outside
the tables run through the exported character CNN and get the network's emissions too.
`--no-word-tables` keeps everything in the graph; a missing or damaged table file or network is
refused, named.
"""

import argparse
import json
import shutil
from pathlib import Path
from typing import List

import numpy as np
import pytest

from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args
from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_allennlp.pretrained import manifest, pretrained_dir
from ldnet_runtime import Tagger
from ldnet_runtime.export_format import ExportFormatError
from ldnet_runtime.indexing import CharacterTableIndexer, WordTableIndexer
from tests.onnx_export.conftest import FIXTURE_ARCHIVES

MAX_DIFFERENCE = 1e-4  # emissions, onnxruntime's float rounding of two graphs
OUTSIDE = ["Zxqwvblorf", "Llanfairpwllgwyngyll", "北京", "🙂x", "@@unknown@@", "Ulaanbaatar-based"]


def exports(archive: Path, folder: Path):
    export_tagger(str(archive), str(folder / "tables"))
    export_tagger(str(archive), str(folder / "network"), word_tables=False)
    return Tagger(folder / "tables", threads=1), Tagger(folder / "network", threads=1)


def table_words(tagger: Tagger) -> List[str]:
    """Every word of every table of `tagger` (the character table holds those of the others)."""
    words: List[str] = []
    for _, indexer in tagger._indexers:
        if isinstance(indexer, CharacterTableIndexer):
            words += sorted(indexer.rows, key=indexer.rows.__getitem__)
    return words


def largest_difference(tables: Tagger, network: Tagger, sentences: List[List[str]]) -> float:
    difference = 0.0
    for first in range(0, len(sentences), 64):
        batch = sentences[first : first + 64]
        (a, lengths), (b, _) = tables.emissions(batch), network.emissions(batch)
        for row, length in enumerate(lengths):
            difference = max(difference, float(np.abs(a[row, :length] - b[row, :length]).max()))
    return difference


def check_every_word(tables: Tagger, network: Tagger) -> int:
    kinds = {type(indexer) for _, indexer in tables._indexers}
    assert {CharacterTableIndexer, WordTableIndexer} <= kinds
    # a token spelled as AllenNLP's padding token has id 0, which the network's LM path
    # (`ids != 0`) reads as padding: not a word the tables are for
    words = [word for word in table_words(tables) if word != "@@PADDING@@"]
    assert words
    sentences = [words[i : i + 25] for i in range(0, len(words), 25)]
    assert largest_difference(tables, network, sentences) < MAX_DIFFERENCE
    assert tables.tag_tokens(sentences) == network.tag_tokens(sentences)
    (indexer,) = [i for _, i in tables._indexers if isinstance(i, CharacterTableIndexer)]
    rows = indexer.vectors.rows[[indexer.rows[word] for word in words[:500]]]
    alone = np.concatenate([indexer.network(indexer.characters.words([w])) for w in words[:500]])
    assert np.abs(rows - alone).max() < 1e-5
    return len(words)


def test_the_fixture_tagger_tables_give_the_network_emissions_for_every_word(tmp_path):
    tables, network = exports(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz", tmp_path)
    assert check_every_word(tables, network) > 50


def test_words_outside_the_tables_run_through_the_network(tmp_path):
    tables, network = exports(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz", tmp_path)
    (indexer,) = [i for _, i in tables._indexers if isinstance(i, CharacterTableIndexer)]
    assert not any(word in indexer.rows for word in OUTSIDE)
    sentences = [OUTSIDE, ["Peter", OUTSIDE[0], "visited", OUTSIDE[1], "."], [OUTSIDE[2]]]
    assert largest_difference(tables, network, sentences) < MAX_DIFFERENCE
    assert tables.tag_tokens(sentences) == network.tag_tokens(sentences)
    assert all(indexer.rows[word] >= indexer.table_rows for word in OUTSIDE)  # computed, kept
    computed = indexer.vectors.used
    tables.tag_tokens(sentences)
    assert indexer.vectors.used == computed  # each word ran through the network once


def test_the_shipped_pruned_tagger_tables_give_the_network_emissions(tmp_path):
    entry = manifest().get("ner_pruned")
    if entry is None or not (pretrained_dir() / entry["file"]).is_file():
        pytest.skip("the shipped ner_pruned tagger (pretrained/MANIFEST.json) is not here")
    tables, network = exports(pretrained_dir() / entry["file"], tmp_path)
    assert check_every_word(tables, network) > 40_000


def test_the_command_without_word_tables_keeps_everything_in_the_graph(tmp_path):
    output_dir = tmp_path / "network"
    export_from_args(
        argparse.Namespace(
            archive_file=str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz"),
            output_dir=str(output_dir),
            fp32=True,
            no_word_tables=True,
        )
    )
    names = {path.name for path in output_dir.iterdir()}
    assert "word_tables.npz" not in names and not any(n.startswith("word_network") for n in names)
    tagger = json.loads((output_dir / "tagger.json").read_text())
    assert "word_tables" not in tagger and "int8" not in tagger
    assert {spec["indexer"]["type"] for spec in tagger["inputs"]} <= {
        "single_id",
        "dense_lm_tokens",
        "characters",
    }


def test_a_missing_or_damaged_table_file_is_named(tmp_path):
    export_tagger(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz"), str(tmp_path / "tables"))
    broken = tmp_path / "broken"
    shutil.copytree(tmp_path / "tables", broken)
    (broken / "word_tables.npz").write_bytes(b"not a table")
    with pytest.raises(ExportFormatError, match=r"word_tables\.npz cannot be read"):
        Tagger(broken)
    (broken / "word_tables.npz").unlink()
    with pytest.raises(ExportFormatError, match=r"word_tables\.npz cannot be read"):
        Tagger(broken)
    shutil.copy(tmp_path / "tables" / "word_tables.npz", broken)
    (broken / "word_network_token_characters.onnx").unlink()
    with pytest.raises(ExportFormatError, match="lacks word_network_token_characters.onnx"):
        Tagger(broken)


def test_the_lm_table_puts_the_sentence_boundaries_around_each_sentence():
    """With `sentence_boundaries`, the LM input is `<S>`, the tokens' rows, `</S>`, then zeros,
    at batch 1 and above (the positions the biLM's `add_sentence_boundaries` gives them)."""
    table = np.arange(12, dtype=np.float32).reshape(4, 3) + 1  # rows of ids 0..3
    spec = {"namespace": "lm", "lowercase_tokens": False, "oov_id": 1}
    bos, eos = [[-1.0, -2.0, -3.0], [7.5, 8.5, 9.5]]
    indexer = WordTableIndexer({**spec, "sentence_boundaries": [bos, eos]}, list("pUab"), table)
    plain = WordTableIndexer(spec, list("pUab"), table)
    sentences = [["a", "b", "x"], ["b"]]
    got = indexer(sentences, 3)
    assert got.shape == (2, 5, 3) and got.dtype == np.float32
    expected = np.zeros((2, 5, 3), dtype=np.float32)
    expected[:, 0] = bos
    expected[0, 1:4] = table[[2, 3, 1]]  # "x" is out of the vocabulary: the OOV row
    expected[0, 4] = eos
    expected[1, 1], expected[1, 2] = table[3], eos
    assert np.array_equal(got, expected)
    assert np.array_equal(indexer([["b"]], 1), expected[1:, :3])
    without = np.zeros((2, 3, 3), dtype=np.float32)
    without[0], without[1, 0] = table[[2, 3, 1]], table[3]
    assert np.array_equal(plain(sentences, 3), without)
