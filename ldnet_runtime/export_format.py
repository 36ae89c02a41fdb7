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
(one array per table: float32, float16, or int8 with one float32 scale per row in
`<table>.scale`, the row being `int8 row * scale`): `word_table` (`namespace`,
`lowercase_tokens`, `oov_id` as `single_id`, and `table`: the row of each id) and
`character_table` (`namespace`, `min_padding_length`, `oov_id` as `characters`; `words`: the
vocabularies.json key of the table's words, `table`, and `network`: the graph file of the
character CNN, character ids `(1, num_words, num_chars)` int64 -> `(1, num_words, dim)`, for
tokens outside the table).
"""

import json
from pathlib import Path
from typing import Any, Dict, Union

import numpy as np

FORMAT = "ldnet-export"
FORMAT_VERSION = 1
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
    if tagger.get("format") != FORMAT or tagger.get("format_version") != FORMAT_VERSION:
        raise ExportFormatError(
            f"{folder / TAGGER_FILE} is format {tagger.get('format')!r} version "
            f"{tagger.get('format_version')!r}; this runtime reads {FORMAT!r} version "
            f"{FORMAT_VERSION} (export the tagger again with this version)."
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
    dim)` (int8 tables multiplied by their row scales); `{}` for an export without them.
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
    loaded = {}
    with stored:
        for name in tables:
            if name not in stored.files:
                raise ExportFormatError(f"{path} has no table {name!r} (named in tagger.json).")
            table = stored[name]
            if table.ndim != 2:
                raise ExportFormatError(f"{path}: table {name!r} is not 2-dimensional.")
            if table.dtype == np.int8:
                scale_name = name + TABLE_SCALE_SUFFIX
                if scale_name not in stored.files:
                    raise ExportFormatError(
                        f"{path}: the int8 table {name!r} has no {scale_name!r}."
                    )
                table = table.astype(np.float32) * stored[scale_name][:, None]
            loaded[name] = np.ascontiguousarray(table, dtype=np.float32)
    return loaded


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as json_file:
            content = json.load(json_file)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportFormatError(f"{path} is not valid UTF-8 JSON ({error}).") from error
    if not isinstance(content, dict):
        raise ExportFormatError(f"{path} must hold a JSON object.")
    return content
