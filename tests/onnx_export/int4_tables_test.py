"""
`allennlp ldnet-export --int4-tables`: every word table at 4 bits, packed two values to a byte
(`export_format.pack_rows_int4`), with one float32 scale per row, in a `format_version` 2 folder,
or a newer one where the folder needs it (the fixture tagger's, whose character CNN is a graph of
words, is version 4, as its int8 export is). The packing round-trips every int4
value at odd and even widths; the fixture tagger's int4 export gives emissions close to its int8
export's and its tables unpack to the int4 quantisation of the fp32 tables; a damaged int4 table or
an unknown version is refused, named.
"""

import argparse
import json
import shutil

import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args, read_conll_tokens
from ldnet_allennlp.onnx_export.exporter import export_tagger, quantize_rows_int4
from ldnet_runtime import Tagger
from ldnet_runtime.export_format import (
    ExportFormatError,
    pack_rows_int4,
    read_word_tables,
    unpack_rows_int4,
)
from tests.onnx_export.conftest import FIXTURE_ARCHIVES
from tests.onnx_export.int8_export_test import CONLL

ARCHIVE = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
# the largest difference of an int4 export's emissions from the int8 export's, on the fixtures'
# CoNLL sentences (measured 0.0046)
MAX_EMISSION_DIFFERENCE = 0.05


@pytest.mark.parametrize("dim", [1, 2, 7, 8, 15, 16])
def test_packing_round_trips_every_int4_value(dim):
    # row i, column j: (i + j) mod 15 - 7, so that every column holds every value from -7 to 7
    rows = ((np.arange(15)[:, None] + np.arange(dim)[None, :]) % 15 - 7).astype(np.int8)
    assert all(set(column) == set(range(-7, 8)) for column in rows.T)
    packed = pack_rows_int4(rows)
    assert packed.dtype == np.uint8 and packed.shape == (15, (dim + 1) // 2)
    unpacked = unpack_rows_int4(packed, dim)
    assert unpacked.dtype == np.int8 and np.array_equal(unpacked, rows)


def test_the_packed_layout_is_the_documented_one():
    # column 2j + 8 in byte j's low nibble, column 2j + 1 + 8 in its high nibble
    packed = pack_rows_int4(np.array([[-7, 7, 0, -1, 3]], dtype=np.int8))
    assert packed.tolist() == [[0x1 | 0xF << 4, 0x8 | 0x7 << 4, 0xB | 0x8 << 4]]
    with pytest.raises(ValueError, match="from -7 to 7"):
        pack_rows_int4(np.array([[8, 0]]))
    with pytest.raises(ValueError, match="from -7 to 7"):
        pack_rows_int4(np.array([[-8, 0]]))


def test_int4_rows_are_within_half_a_scale_of_the_table():
    table = np.random.default_rng(0).normal(0, 2, (50, 9)).astype(np.float32)
    table[3] = 0.0
    rows, scale = quantize_rows_int4(table)
    assert rows.dtype == np.int8 and scale.dtype == np.float32 and scale.shape == (50,)
    assert np.abs(rows).max(axis=1).tolist() == [7] * 3 + [0] + [7] * 46
    assert np.all(np.abs(rows * scale[:, None] - table) <= scale[:, None] / 2 + 1e-6)


@pytest.fixture(scope="module")
def int4_and_int8(tmp_path_factory, one_thread_session):
    folder = tmp_path_factory.mktemp("int4")
    export_from_args(
        argparse.Namespace(archive_file=ARCHIVE, output_dir=str(folder / "int4"), int4_tables=True)
    )
    export_from_args(argparse.Namespace(archive_file=ARCHIVE, output_dir=str(folder / "int8")))
    return folder / "int4", folder / "int8"


def test_an_int4_export_is_version_4_and_close_to_the_int8_one(int4_and_int8, fixture_exports):
    int4_dir, int8_dir = int4_and_int8
    tagger = json.loads((int4_dir / "tagger.json").read_text())
    assert tagger["format_version"] == 4  # its character CNN's graph takes words
    assert json.loads((int8_dir / "tagger.json").read_text())["format_version"] == 4
    tables = tagger["word_tables"]["tables"]
    assert sorted(tables) == ["lm", "token_characters", "tokens"]
    assert {table["dtype"] for table in tables.values()} == {"int4"}
    assert tagger["int8"]["word_tables"].startswith("int4 packed two to a byte")
    fp32_tables = read_word_tables(fixture_exports["ner_ldnet_pruned"], tagger)
    with np.load(int4_dir / "word_tables.npz") as stored:
        for name, description in tables.items():
            packed, scale = stored[name], stored[name + ".scale"]
            assert packed.dtype == np.uint8
            assert packed.shape == (description["rows"], (description["dim"] + 1) // 2)
            rows, expected_scale = quantize_rows_int4(fp32_tables[name])
            assert np.array_equal(unpack_rows_int4(packed, description["dim"]), rows)
            assert np.array_equal(scale, expected_scale)
    int4, int8 = Tagger(int4_dir, threads=1), Tagger(int8_dir, threads=1)
    sentences = read_conll_tokens(str(CONLL))
    (a, lengths), (b, _) = int4.emissions(sentences), int8.emissions(sentences)
    difference = max(float(np.abs(a[i, :n] - b[i, :n]).max()) for i, n in enumerate(lengths))
    print(f"int4 vs int8 tables: largest emission difference {difference:.3g}")
    assert 0 < difference <= MAX_EMISSION_DIFFERENCE
    assert int4.tag_tokens(sentences) == int8.tag_tokens(sentences)


def test_int4_tables_go_with_the_int8_export_with_tables_only(tmp_path):
    for settings in ({"int8": False}, {"int8": True, "word_tables": False}):
        with pytest.raises(ConfigurationError, match="--int4-tables stores the word tables"):
            export_tagger(ARCHIVE, str(tmp_path / "x"), int4_tables=True, **settings)
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_int4_table_or_an_unknown_version_is_refused(int4_and_int8, tmp_path):
    int4_dir, _ = int4_and_int8
    broken = tmp_path / "broken"
    shutil.copytree(int4_dir, broken)
    with np.load(int4_dir / "word_tables.npz") as stored:
        arrays = {name: stored[name] for name in stored.files}

    def rewrite(**changes):
        np.savez(broken / "word_tables.npz", **{**arrays, **changes})

    rewrite(lm=arrays["lm"][:, :-1])
    with pytest.raises(ExportFormatError, match=r"word_tables\.npz: the int4 table 'lm' has"):
        Tagger(broken)
    del arrays["tokens.scale"]
    rewrite()
    with pytest.raises(ExportFormatError, match=r"int4 table 'tokens' has no 'tokens\.scale'"):
        Tagger(broken)
    shutil.copy(int4_dir / "word_tables.npz", broken)
    tagger = json.loads((int4_dir / "tagger.json").read_text())
    tagger["word_tables"]["tables"]["lm"]["dtype"] = "int8"
    (broken / "tagger.json").write_text(json.dumps(tagger))
    with pytest.raises(ExportFormatError, match="'lm' is packed int4 but tagger.json"):
        Tagger(broken)
    tagger["word_tables"]["tables"]["lm"]["dtype"] = "int4"
    tagger["format_version"] = 5
    (broken / "tagger.json").write_text(json.dumps(tagger))
    with pytest.raises(
        ExportFormatError, match="version 5; this runtime reads .* versions 1, 2, 3, 4"
    ):
        Tagger(broken)
