"""
The folder `allennlp ldnet-export` writes, and reading it back with its checks.

- `model.onnx`: the network, from the indexed tokens to the CRF's emissions. Inputs: `mask`
  `(batch, num_tokens)` bool, then one per token embedder, in `tagger.json`'s `inputs` order;
  output `logits` `(batch, num_tokens, num_tags)` float32. Batch size, sentence length and word
  length are dynamic.
- `tagger.json`: what the graph's inputs are and how to index tokens for them (`inputs`: name,
  embedder kind, indexer), the label encoding, the spaCy model of the predictor, what made the
  export, and the exporter's own check against AllenNLP (`check`).
- `vocabularies.json`: each indexer's vocabulary namespace, tokens in id order (AllenNLP's
  `@@PADDING@@` and `@@UNKNOWN@@` first where the namespace has them).
- `crf.json`: the tag set (`tags`, in id order), the CRF's `transitions`, `start_transitions` /
  `end_transitions` (null without), `constraint_mask`, and `viterbi_transitions`, the
  `(num_tags + 2, num_tags + 2)` matrix the decoder uses (`ldnet_allennlp.tagging.viterbi.
  viterbi_transitions`, bitwise).
- `tokenizer.json` (optional; older exports lack it): the rules of the spaCy model's tokenizer,
  which `rule_tokenizer.RuleTokenizer` replays without spaCy to tokenise raw sentences
  (`rule_tokenizer.tokenizer_rules`); without it the runtime tokenises with spaCy.

Indexers (`inputs[i].indexer`): `single_id` and `dense_lm_tokens` (`namespace`,
`lowercase_tokens`, `oov_id`: one id per token), `characters` (`namespace`,
`min_padding_length`, `oov_id`: one id per character), `glove_tokens` (the vectors of the
lowercased words: `package`, `num_words`, `dim`, `fingerprint`, `index_sha256`,
`unknown_vector`; see `glove.py`). A tagger with GloVe has two more files, GloVe's word index:
`glove_words.txt` (the words, sorted, one per line) and `glove_rows.npy` (their rows); the
vectors themselves are read from the installed GloVe package.

An export with word tables (`tagger.json`'s `word_tables`) feeds the graph, for its `embedding`,
`character_encoding`, `layer_selection` and `dense_lm_scalar_mix` inputs, the vectors that
depend on the word alone, `(batch, num_tokens, dim)` float32, looked up in `word_tables.npz`
(one array per table: float32, float16, int8 with one float32 scale per row in
`<table>.scale`, the row being `int8 row * scale`, or int4 packed two values per byte with its
scales likewise, `pack_rows_int4`; `tagger.json`'s `word_tables.tables[<table>].dtype` says
which): `word_table` (`namespace`, `lowercase_tokens`, `oov_id` as `single_id`, and `table`:
the row of each id) and `character_table` (`namespace`, `min_padding_length`, `oov_id` as
`characters`; `words`: the vocabularies.json key of the table's words, `table`, and `network`:
the graph file of the character CNN, character ids `(num_words, num_chars)` int64 ->
`(num_words, dim)`, for tokens outside the table; `(1, num_words, num_chars)` -> `(1,
num_words, dim)` in exports before version 4).

A `word_table` of the LMs' input embeddings may have `sentence_boundaries`: the vectors of
`<S>` and `</S>` (float32, two lists of `dim` numbers), which the runtime puts before and after
each sentence, so that this input is
`(batch, num_tokens + 2, dim)` (the biLM's sentence boundaries, which older exports put in
inside the graph).

Versions: `format_version` 1 is an export with neither int4 tables nor `sentence_boundaries`;
one with int4 tables (`allennlp ldnet-export --int4-tables`) and no `sentence_boundaries` is
version 2; one with `sentence_boundaries` is version 3, with or without int4 tables; one whose
character-CNN graph takes words, `(num_words, num_chars)`, is version 4, with or without the
others. This runtime reads all four.
"""

import json
from pathlib import Path
from typing import Any, Dict, Union

import numpy as np

FORMAT = "ldnet-export"
FORMAT_VERSION = 1  # exports without int4 word tables or sentence_boundaries
INT4_TABLES_FORMAT_VERSION = 2  # exports with int4 word tables, without sentence_boundaries
BOUNDARY_ROWS_FORMAT_VERSION = 3  # exports with sentence_boundaries
WORD_NETWORK_FORMAT_VERSION = 4  # exports whose character-CNN graph takes words
# the versions this runtime reads
FORMAT_VERSIONS = (
    FORMAT_VERSION,
    INT4_TABLES_FORMAT_VERSION,
    BOUNDARY_ROWS_FORMAT_VERSION,
    WORD_NETWORK_FORMAT_VERSION,
)
GRAPH_FILE = "model.onnx"
TAGGER_FILE = "tagger.json"
VOCABULARIES_FILE = "vocabularies.json"
CRF_FILE = "crf.json"
FILES = (GRAPH_FILE, TAGGER_FILE, VOCABULARIES_FILE, CRF_FILE)
TOKENIZER_FILE = "tokenizer.json"  # optional: exports made before it lack it

MASK_INPUT = "mask"
LOGITS_OUTPUT = "logits"
INDEXER_TYPES = (
    "single_id",
    "dense_lm_tokens",
    "characters",
    "glove_tokens",
    "word_table",
    "character_table",
)
WORD_TABLES_FILE = "word_tables.npz"
TABLE_SCALE_SUFFIX = ".scale"
LABEL_ENCODINGS = ("BIOUL", "BIO", "IOB1")


class ExportFormatError(ValueError):
    """A folder that is not a complete `ldnet-export` of a version this runtime reads."""


def read_export(export_dir: Union[str, Path]) -> Dict[str, Any]:
    """
    The three JSON files of `export_dir`, checked, as `{"tagger": ..., "vocabularies": ...,
    "crf": ...}`, and `"graph"`: the path of `model.onnx`. An `ExportFormatError` names what is
    missing or wrong.
    """
    folder = Path(export_dir)
    if not folder.is_dir():
        raise ExportFormatError(
            f"{folder} is not a folder: give the folder that `allennlp ldnet-export` wrote."
        )
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise ExportFormatError(
            f"{folder} lacks {', '.join(missing)}: it is not a complete `allennlp ldnet-export` "
            "folder (export the tagger again)."
        )
    loaded: Dict[str, Any] = {"graph": folder / GRAPH_FILE}
    for key, name in (("tagger", TAGGER_FILE), ("vocabularies", VOCABULARIES_FILE)):
        loaded[key] = _read_json(folder / name)
    loaded["crf"] = _read_json(folder / CRF_FILE)
    tagger = loaded["tagger"]
    if tagger.get("format") != FORMAT or tagger.get("format_version") not in FORMAT_VERSIONS:
        raise ExportFormatError(
            f"{folder / TAGGER_FILE} is format {tagger.get('format')!r} version "
            f"{tagger.get('format_version')!r}; this runtime reads {FORMAT!r} versions "
            f"{', '.join(map(str, FORMAT_VERSIONS))} (export the tagger again with this "
            "version of ldnet-allennlp)."
        )
    if tagger.get("label_encoding") not in LABEL_ENCODINGS:
        raise ExportFormatError(
            f"{folder / TAGGER_FILE}: label_encoding {tagger.get('label_encoding')!r} is not one "
            f"of {', '.join(LABEL_ENCODINGS)}."
        )
    for spec in tagger.get("inputs", []):
        kind = spec.get("indexer", {}).get("type")
        if kind not in INDEXER_TYPES:
            raise ExportFormatError(
                f"{folder / TAGGER_FILE}: input {spec.get('name')!r} has indexer type {kind!r}, "
                f"not one of {', '.join(INDEXER_TYPES)}."
            )
        for key in ("namespace", "words"):
            namespace = spec["indexer"].get(key)
            if namespace is not None and namespace not in loaded["vocabularies"]:
                raise ExportFormatError(
                    f"{folder / VOCABULARIES_FILE} has no namespace {namespace!r} (input "
                    f"{spec.get('name')!r}, indexer key {key!r})."
                )
        network = spec["indexer"].get("network")
        if network is not None and not (folder / network).is_file():
            raise ExportFormatError(
                f"{folder} lacks {network}, input {spec.get('name')!r}'s network (export the "
                "tagger again)."
            )
    return loaded


def read_word_tables(export_dir: Union[str, Path], tagger: Dict[str, Any]) -> Dict[str, Any]:
    """
    The word tables that `tagger.json` (`tagger`) names, by name, as float32 arrays `(rows,
    dim)` (int8 and int4 tables multiplied by their row scales); `{}` for an export without them.
    """
    tables = [spec["indexer"]["table"] for spec in tagger["inputs"] if "table" in spec["indexer"]]
    if not tables:
        return {}
    path = Path(export_dir) / WORD_TABLES_FILE
    try:
        stored = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise ExportFormatError(
            f"{path} cannot be read ({error}); export the tagger again."
        ) from error
    described = tagger.get("word_tables", {}).get("tables", {})
    loaded = {}
    with stored:
        for name in tables:
            if name not in stored.files:
                raise ExportFormatError(f"{path} has no table {name!r} (named in tagger.json).")
            table = stored[name]
            if table.ndim != 2:
                raise ExportFormatError(f"{path}: table {name!r} is not 2-dimensional.")
            if table.dtype in (np.int8, np.uint8):
                table = _dequantized(path, name, table, stored, described.get(name, {}))
            loaded[name] = np.ascontiguousarray(table, dtype=np.float32)
    return loaded


def _dequantized(
    path: Path, name: str, table: np.ndarray, stored: Any, description: Dict[str, Any]
) -> np.ndarray:
    """The int8 table `table` `(rows, dim)`, or the packed int4 one (uint8 `(rows, (dim + 1) //
    2)`, `tagger.json`'s `description` giving `dim`), times its row scales, float32."""
    dtype = "int8" if table.dtype == np.int8 else "int4"
    scale_name = name + TABLE_SCALE_SUFFIX
    if scale_name not in stored.files:
        raise ExportFormatError(f"{path}: the {dtype} table {name!r} has no {scale_name!r}.")
    scale = stored[scale_name]
    if scale.shape != (table.shape[0],):
        raise ExportFormatError(
            f"{path}: {scale_name!r} has shape {scale.shape}, not one scale for each of the "
            f"{table.shape[0]} rows of {name!r}; export the tagger again."
        )
    if dtype == "int4":
        dim = description.get("dim")
        if description.get("dtype") != "int4" or not isinstance(dim, int) or dim < 1:
            raise ExportFormatError(
                f"{path}: table {name!r} is packed int4 but tagger.json does not describe it "
                "as an int4 table with its dim; export the tagger again."
            )
        if table.shape[1] != (dim + 1) // 2:
            raise ExportFormatError(
                f"{path}: the int4 table {name!r} has {table.shape[1]} bytes a row, not "
                f"{(dim + 1) // 2} for dim {dim}; export the tagger again."
            )
        table = unpack_rows_int4(table, dim)
    return table.astype(np.float32) * scale.astype(np.float32)[:, None]


def pack_rows_int4(rows: np.ndarray) -> np.ndarray:
    """
    int4 values `rows` `(num_rows, dim)`, integers from -7 to 7, packed two to a byte: uint8
    `(num_rows, (dim + 1) // 2)`, byte `j` of a row holding column `2j` as `value + 8` in its low
    nibble and column `2j + 1` as `value + 8` in its high nibble (an odd `dim`'s last high
    nibble holds 0 + 8). `unpack_rows_int4` undoes it.
    """
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.size and (rows.min() < -7 or rows.max() > 7):
        raise ValueError("int4 rows are a 2-dimensional array of integers from -7 to 7.")
    nibbles = rows.astype(np.int16) + 8
    if rows.shape[1] % 2:
        nibbles = np.pad(nibbles, ((0, 0), (0, 1)), constant_values=8)
    return (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)


def unpack_rows_int4(packed: np.ndarray, dim: int) -> np.ndarray:
    """The int8 values `(num_rows, dim)` of the rows that `pack_rows_int4` packed into
    `packed` uint8 `(num_rows, (dim + 1) // 2)`."""
    rows = np.empty((packed.shape[0], 2 * packed.shape[1]), dtype=np.int8)
    rows[:, 0::2] = (packed & 0x0F).astype(np.int8) - 8
    rows[:, 1::2] = (packed >> 4).astype(np.int8) - 8
    return rows[:, :dim]


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as json_file:
            content = json.load(json_file)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportFormatError(f"{path} is not valid UTF-8 JSON ({error}).") from error
    if not isinstance(content, dict):
        raise ExportFormatError(f"{path} must hold a JSON object.")
    return content
