"""
The tagger's token indexers, replayed over the exported vocabularies: each turns a batch of
tokenised sentences into one input array of the graph, as AllenNLP's indexer and batch padding
would.

- `single_id` and `dense_lm_tokens` (AllenNLP's `SingleIdTokenIndexer` and ours, which is one
  over the LMs' cased vocabulary): the token, lowercased if `lowercase_tokens`, looked up in
  its namespace, `oov_id` (`@@UNKNOWN@@`) when absent; `(batch, num_tokens)` int64, 0 at
  padding. (The LMs' sentence boundaries are added inside the graph, as `DenseBiLm` adds them.)
- `characters` (`TokenCharactersIndexer` with the default `CharacterTokenizer`): each character
  looked up, `oov_id` when absent; `(batch, num_tokens, num_chars)` int64 where `num_chars` is
  the longest word of the batch, at least `min_padding_length`; 0 at padding.
- `glove_tokens` + `glove_embedding`: the vectors themselves (`glove.GloveLookup`: the word
  index exported with the tagger, the vectors of the installed GloVe package).
- `word_table` (an export with word tables): a `single_id` / `dense_lm_tokens` id's row of the
  exported table, i.e. what the graph would compute from the id (`(batch, num_tokens, dim)`
  float32, 0 at padding); with `sentence_boundaries` (the LMs' input embeddings), the vectors
  of `<S>` and `</S>` before and after each sentence, `(batch, num_tokens + 2, dim)`.
- `character_table`: a token's row of the table of the character CNN's outputs for the words of
  the vocabularies; a token outside the table is indexed as by `characters` and run through
  the exported character CNN (`network`), once (its vector is kept).

The word-level indexers (`single_id`, `dense_lm_tokens`, `word_table`, `character_table`,
`glove_tokens`) give each token a row (`token_rows`), which `TokenRows` keeps per token. A
batch's input is then one `take` from the indexer's rows (`gather_padded`) by the batch's
`(batch, num_tokens)` rows, padded with `padding_row`: a row of zeros that each indexer's rows
hold (`padded_rows`), so padding needs no second pass.
"""

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ldnet_runtime.glove import GloveLookup

Sentences = Sequence[Sequence[str]]


class GrowingRows:
    """
    Rows kept in one array that grows by doubling (so adding n rows copies O(n) rows over
    time, not the whole array each time): `rows[:used]` are the rows so far, the first
    `kept` of them (a table given at the start) never forgotten.

    # Parameters

    first : `np.ndarray`
        `(kept, dim)`: the rows to start with (a table), or `(0, dim)`.
    """

    def __init__(self, first: np.ndarray) -> None:
        self.rows = first
        self.kept = self.used = len(first)

    def add(self, new: np.ndarray) -> int:
        """Appends `new` `(n, dim)`; returns the index of its first row."""
        first, needed = self.used, self.used + len(new)
        if needed > len(self.rows):
            capacity = max(needed, self.kept + 2 * (len(self.rows) - self.kept), self.kept + 1024)
            grown = np.empty((capacity,) + self.rows.shape[1:], dtype=self.rows.dtype)
            grown[:first] = self.rows[:first]
            self.rows = grown
        self.rows[first:needed] = new
        self.used = needed
        return first

    def forget(self) -> None:
        """Forgets every row added after the first `kept` (the array keeps its size)."""
        self.used = self.kept


def put_tokens(output: np.ndarray, sentences: Sentences, values: Any) -> None:
    """
    `output[b, t] = values[i]` for the i-th token of the batch (sentence b's token t, the
    sentences' tokens one after another), by one masked assignment (one slice for one sentence).
    """
    if len(sentences) == 1:
        output[0, : len(sentences[0])] = values
        return
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    output[np.arange(output.shape[1]) < lengths[:, None]] = values


def padded_rows(
    rows: np.ndarray, lengths: Sequence[int], num_tokens: int, padding: Any
) -> np.ndarray:
    """
    `(batch, num_tokens, *rows.shape[1:])` int64: the tokens' rows `rows` (`(batch tokens,
    ...)`, the sentences' tokens one after another) in place, `padding` after each sentence's
    `lengths[b]` tokens (one sentence that fills `num_tokens`: a view of `rows`).
    """
    if len(lengths) == 1 and lengths[0] == num_tokens:
        return rows[None]
    index = np.empty((len(lengths), num_tokens) + rows.shape[1:], dtype=np.int64)
    index[...] = padding
    index[np.arange(num_tokens) < np.asarray(lengths)[:, None]] = rows
    return index


class PaddedGather:
    """
    What the word-level indexers share: `gather`, the input array of a batch from its tokens'
    rows (`token_rows`, in token order), is `gather_padded` of those rows padded with the
    indexer's `padding_row` (`padded_rows`).
    """

    padding_row: int

    def gather(self, rows: np.ndarray, sentences: Sentences, num_tokens: int) -> np.ndarray:
        lengths = [len(tokens) for tokens in sentences]
        index = padded_rows(rows, lengths, num_tokens, self.padding_row)
        return self.gather_padded(index, lengths)

    def gather_padded(self, index: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
        raise NotImplementedError


class SingleIdIndexer(PaddedGather):
    """
    `single_id` and `dense_lm_tokens`: one id per token, looked up in a dict; the ids of the
    whole batch are put in place by one masked assignment.

    # Parameters

    spec : `Dict[str, Any]`
        The `indexer` entry of `tagger.json`.
    words : `List[str]`
        The namespace's vocabulary, in id order.
    """

    def __init__(self, spec: Dict[str, Any], words: List[str]) -> None:
        self.namespace = spec["namespace"]
        self.lowercase_tokens = bool(spec["lowercase_tokens"])
        self.oov_id: Optional[int] = spec["oov_id"]
        self.token_to_id = {word: index for index, word in enumerate(words)}

    def ids(self, tokens: Sequence[str]) -> List[int]:
        lookup, oov_id = self.token_to_id, self.oov_id
        texts = [token.lower() for token in tokens] if self.lowercase_tokens else tokens
        ids = [lookup.get(text, oov_id) for text in texts]
        if oov_id is None and None in ids:
            text = texts[ids.index(None)]
            raise KeyError(f"{text!r} is not in namespace {self.namespace!r}, which has no OOV")
        return ids

    token_rows = ids
    padding_row = 0  # the id at padding

    def gather_padded(self, index: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
        """The input array of the batch from its `(batch, num_tokens)` ids, padded."""
        return np.ascontiguousarray(index)

    def reset(self) -> None:
        """Nothing is kept: the ids are the vocabulary's."""

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        flat = [token for tokens in sentences for token in tokens]
        return self.gather(np.asarray(self.ids(flat), dtype=np.int64), sentences, num_tokens)


class CharacterIndexer:
    """
    `characters`: one id per character; each token's ids are kept (a token's characters are
    looked up once), and the batch's are put in place by one masked assignment.

    # Parameters

    spec : `Dict[str, Any]`
        The `indexer` entry of `tagger.json`.
    characters : `List[str]`
        The namespace's vocabulary, in id order.
    """

    CACHE_SIZE = 200_000  # tokens whose character ids are kept (then the cache starts again)

    def __init__(self, spec: Dict[str, Any], characters: List[str]) -> None:
        self.min_padding_length = int(spec["min_padding_length"])
        self.characters = SingleIdIndexer(
            {"namespace": spec["namespace"], "lowercase_tokens": False, "oov_id": spec["oov_id"]},
            characters,
        )
        self._token_ids: Dict[str, List[int]] = {}

    def token_ids(self, token: str) -> List[int]:
        ids = self._token_ids.get(token)
        if ids is None:
            if len(self._token_ids) >= self.CACHE_SIZE:
                self._token_ids.clear()
            ids = self._token_ids[token] = self.characters.ids(list(token))
        return ids

    def words(self, tokens: Sequence[str]) -> np.ndarray:
        """`(len(tokens), num_chars)` int64: each token's character ids, then 0s up to
        `num_chars`, the longest token's length, at least `min_padding_length`."""
        num_chars = max(self.min_padding_length, max(map(len, tokens), default=0))
        padding = [0] * num_chars
        ids: List[int] = []
        for token in tokens:
            ids += self.token_ids(token)
            ids += padding[len(token) :]
        return np.array(ids, dtype=np.int64).reshape(len(tokens), num_chars)

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        words = self.words([token for sentence in sentences for token in sentence])
        output = np.zeros((len(sentences), num_tokens, words.shape[1]), dtype=np.int64)
        put_tokens(output, sentences, words)
        return output


class WordTableIndexer(PaddedGather):
    """
    `word_table`: each token's id (as `SingleIdIndexer`) and that id's row of `table`, the
    rows of the whole batch taken at once (`gather_padded`).

    # Parameters

    spec : `Dict[str, Any]`
        The `indexer` entry of `tagger.json`.
    words : `List[str]`
        The namespace's vocabulary, in id order.
    table : `np.ndarray`
        `(len(words), dim)` float32.
    """

    def __init__(self, spec: Dict[str, Any], words: List[str], table: np.ndarray) -> None:
        self.ids = self.token_rows = SingleIdIndexer(spec, words).ids
        boundaries = spec.get("sentence_boundaries")
        # the vectors of <S> and </S>, put before and after each sentence, or None
        self.boundaries = None if boundaries is None else np.asarray(boundaries, np.float32)
        # `table`, then a row of zeros (`padding_row`), then <S> and </S> (with boundaries)
        extra = [np.zeros((1, table.shape[1]), np.float32)]
        if self.boundaries is not None:
            extra.append(self.boundaries.reshape(2, table.shape[1]))
        self.rows = np.concatenate([np.asarray(table, np.float32)] + extra)
        self.padding_row = len(table)

    def gather_padded(self, index: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
        """
        The input array of the batch from its `(batch, num_tokens)` ids, padded with
        `padding_row`: `(batch, num_tokens, dim)`, or `(batch, num_tokens + 2, dim)` with the
        `<S>` row first and the `</S>` row after each sentence.
        """
        if self.boundaries is None:
            return self.rows.take(index, axis=0)
        batch, num_tokens = index.shape
        framed = np.empty((batch, num_tokens + 2), dtype=np.int64)
        framed[:, 0] = self.padding_row + 1
        framed[:, 1:-1] = index
        framed[:, -1] = self.padding_row
        framed[np.arange(batch), np.asarray(lengths) + 1] = self.padding_row + 2
        return self.rows.take(framed, axis=0)

    def reset(self) -> None:
        """Nothing is kept: the rows are the table's."""

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        flat = [token for tokens in sentences for token in tokens]
        return self.gather(np.asarray(self.ids(flat), dtype=np.int64), sentences, num_tokens)


class CharacterTableIndexer(PaddedGather):
    """
    `character_table`: each token's character-CNN output, its row of `table` where the token is
    one of the table's `words`, else computed by `network` from its character ids (as
    `characters` indexes them) and kept, so that a token runs through the network once (up to
    `CACHE_SIZE` tokens, then those kept start again).

    # Parameters

    spec : `Dict[str, Any]`
        The `indexer` entry of `tagger.json`.
    characters : `List[str]`
        The character namespace's vocabulary, in id order.
    words : `List[str]`
        The table's words, in row order.
    table : `np.ndarray`
        `(len(words), dim)` float32.
    network : `Callable[[np.ndarray], np.ndarray]`
        Character ids `(num_words, num_chars)` -> `(num_words, dim)` float32.
    """

    CACHE_SIZE = 200_000

    def __init__(
        self,
        spec: Dict[str, Any],
        characters: List[str],
        words: List[str],
        table: np.ndarray,
        network: Callable[[np.ndarray], np.ndarray],
    ) -> None:
        if len(words) != table.shape[0]:
            raise ValueError(f"{len(words)} words for a table of {table.shape[0]} rows")
        self.characters = CharacterIndexer(spec, characters)
        self.network = network
        self.table_rows = len(words)
        self.rows = {word: row for row, word in enumerate(words)}
        # the table's rows, a row of zeros (`padding_row`), then those of tokens outside it
        self.padding_row = len(words)
        zeros = np.zeros((1, table.shape[1]), np.float32)
        self.vectors = GrowingRows(np.concatenate([np.asarray(table, np.float32), zeros]))
        self.dim = table.shape[1]

    def token_rows(self, tokens: Sequence[str]) -> np.ndarray:
        """Each token's row of `self.vectors`, running the network on the tokens not there."""
        rows = self.rows
        found = [rows.get(token, -1) for token in tokens]
        if -1 in found:
            new = list(dict.fromkeys(t for t, row in zip(tokens, found) if row == -1))
            self._add(new)
            found = [rows[token] for token in tokens]
        return np.asarray(found, dtype=np.int64)

    def reset(self) -> None:
        """Forgets the vectors computed for tokens outside the table."""
        self.vectors.forget()
        self.rows = {w: r for w, r in self.rows.items() if r < self.table_rows}

    def _add(self, tokens: List[str]) -> None:
        """Runs the network on `tokens` (not in `self.rows`) and keeps their vectors."""
        if self.vectors.used + len(tokens) > self.table_rows + self.CACHE_SIZE:
            self.reset()
        computed = self.network(self.characters.words(tokens))
        first = self.vectors.add(computed)
        self.rows.update((token, first + i) for i, token in enumerate(tokens))

    def gather_padded(self, index: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
        """The input array `(batch, num_tokens, dim)` from its `(batch, num_tokens)` rows,
        padded with `padding_row`."""
        return self.vectors.rows.take(index, axis=0)

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        rows = self.token_rows([token for tokens in sentences for token in tokens])
        return self.gather(rows, sentences, num_tokens)


class GloveIndexer(PaddedGather):
    """
    `glove_tokens`: each token's GloVe vector (`glove.GloveLookup`: of its lowercased form, the
    tagger's unknown vector where GloVe lacks the word). `token_rows` keeps the vectors of the
    tokens it is given, one row each, after a row of zeros (`padding_row`) and the unknown
    vector, so that a batch's vectors are one `take` (`gather_padded`); `reset` forgets them.
    """

    padding_row = 0
    UNKNOWN_ROW = 1

    def __init__(self, spec: Dict[str, Any], export_dir: Path) -> None:
        self.lookup = GloveLookup(spec, export_dir)
        unknown = self.lookup.unknown_vector.reshape(1, -1)
        self.vectors = GrowingRows(np.concatenate([np.zeros_like(unknown), unknown]))

    def token_rows(self, tokens: Sequence[str]) -> List[int]:
        """Each token's row of `self.vectors`, where its GloVe vector is kept from now on."""
        glove_rows = self.lookup.rows(tokens)
        known = [row for row in glove_rows if row >= 0]
        row = self.vectors.add(self.lookup.matrix[known]) if known else 0
        rows = []
        for glove_row in glove_rows:
            if glove_row < 0:
                rows.append(self.UNKNOWN_ROW)
            else:
                rows.append(row)
                row += 1
        return rows

    def gather_padded(self, index: np.ndarray, lengths: Sequence[int]) -> np.ndarray:
        """The input array `(batch, num_tokens, dim)` from its `(batch, num_tokens)` rows,
        padded with `padding_row`."""
        return self.vectors.rows.take(index, axis=0)

    def reset(self) -> None:
        """Forgets the vectors kept by `token_rows`."""
        self.vectors.forget()

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        return self.lookup.vectors(sentences, num_tokens)


class TokenRows:
    """
    The rows of every word-level input (`token_rows` of each indexer: an id, a table row, a
    GloVe row) of each token, found with one dict lookup per token: a token's rows are looked
    up by each indexer the first time it is seen, then kept, for up to `CACHE_SIZE` tokens
    (then every indexer forgets what it computed for tokens outside its tables, and the rows
    are found again).

    # Parameters

    indexers : `Sequence[Any]`
        Indexers with `token_rows(tokens)`, `padding_row`, `gather_padded(index, lengths)` and
        `reset()`.
    """

    CACHE_SIZE = 200_000

    def __init__(self, indexers: Sequence[Any]) -> None:
        self.indexers = list(indexers)
        self.padding = np.array([indexer.padding_row for indexer in self.indexers], np.int64)
        self._index: Dict[str, int] = {}  # token -> its row of `self._rows`
        self._rows = GrowingRows(np.zeros((0, len(self.indexers)), dtype=np.int64))

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        """`(len(tokens), len(indexers))` int64: each token's row for each indexer."""
        index = self._index
        found = [index.get(token, -1) for token in tokens]
        if -1 in found:
            new = list(dict.fromkeys(t for t, i in zip(tokens, found) if i == -1))
            if len(index) + len(new) > self.CACHE_SIZE:
                self.reset()
                index = self._index
                new = list(dict.fromkeys(tokens))
            self._add(new)
            found = [index[token] for token in tokens]
        return self._rows.rows[found]

    def padded(self, rows: np.ndarray, lengths: Sequence[int], num_tokens: int) -> np.ndarray:
        """`(batch, num_tokens, len(indexers))`: the rows of a batch's tokens (`rows`, from
        `__call__`) in place, each indexer's `padding_row` after each sentence."""
        return padded_rows(rows, lengths, num_tokens, self.padding)

    def reset(self) -> None:
        """Forgets every token kept, and each indexer what it computed for tokens outside its
        tables: as just loaded."""
        self._index = {}
        self._rows.forget()
        for indexer in self.indexers:
            indexer.reset()

    def _add(self, tokens: List[str]) -> None:
        """Looks up the rows of `tokens` (none of them kept yet) with each indexer."""
        columns = [
            np.asarray(indexer.token_rows(tokens), dtype=np.int64) for indexer in self.indexers
        ]
        first = self._rows.add(np.stack(columns, axis=1))
        self._index.update((token, first + i) for i, token in enumerate(tokens))


def build_indexer(
    spec: Dict[str, Any],
    vocabularies: Dict[str, List[str]],
    export_dir: Path,
    tables: Optional[Dict[str, np.ndarray]] = None,
    network: Optional[Callable[[str], Callable[[np.ndarray], np.ndarray]]] = None,
):
    """
    The indexer of one `tagger.json` input entry's `indexer` spec; `tables`: the export's word
    tables by name (`export_format.read_word_tables`), `network`: a graph file's name -> a
    function running it on one input (both for `word_table` and `character_table`).
    """
    kind = spec["type"]
    if kind in ("single_id", "dense_lm_tokens"):
        return SingleIdIndexer(spec, vocabularies[spec["namespace"]])
    if kind == "characters":
        return CharacterIndexer(spec, vocabularies[spec["namespace"]])
    if kind == "glove_tokens":
        return GloveIndexer(spec, export_dir)
    if kind == "word_table" and tables is not None:
        return WordTableIndexer(spec, vocabularies[spec["namespace"]], tables[spec["table"]])
    if kind == "character_table" and tables is not None and network is not None:
        return CharacterTableIndexer(
            spec,
            vocabularies[spec["namespace"]],
            vocabularies[spec["words"]],
            tables[spec["table"]],
            network(spec["network"]),
        )
    raise ValueError(f"unknown indexer type {kind!r}")
