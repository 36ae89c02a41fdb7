"""
`export_tagger(archive, output_dir)`: a CRF tagger archive as a folder that `ldnet_runtime` runs
without torch or AllenNLP (the folder's files: `ldnet_runtime/export_format.py`).

- the network, from the indexed tokens to the CRF's emissions, as one ONNX graph
  (`emissions.EmissionNetwork`, traced by torch's TorchScript-based exporter,
  `torch.onnx.export(..., dynamo=False)`: the dynamo-based one needs onnxscript, which is not
  in the lock, and the traced graph is checked below);
- how to index tokens for it: each indexer's settings and vocabulary namespace as JSON (the
  GloVe vectors stay in the installed package, which the runtime reads, as the model does);
- the CRF: the tag set, its transitions and constraints, and the exact transition matrix its
  Viterbi decodes with.
- the predictor's spaCy tokenizer as rules (`tokenizer.json`, `_write_tokenizer_rules`), which
  the runtime replays on raw sentences without spaCy;
- with `word_tables` (the default): everything that depends on the word alone, computed once
  for every word of the vocabularies (`_write_word_tables`): the rows of each `embedding`, the
  LMs' input embeddings (by LM id), and the character CNN's output for every word of the
  single-id and LM vocabularies (`word_tables.npz`, float16 where that loses nothing, else
  float32), with the character CNN as a graph of its own (`word_network_<input>.onnx`) for the
  words outside its table. The main graph then takes those vectors as inputs.

The exporter then checks its own output: the runtime, loaded from the new folder, must give the
tagger's tags on a few sentences, with emissions within `MAX_LOGIT_DIFFERENCE` of the
tagger's. The folder is written under a temporary name beside `output_dir` and renamed when
complete, so a failed export leaves nothing behind.

With `int8=True` (what `allennlp ldnet-export` does unless given `--fp32`), the checked fp32
graph is then quantised by onnxruntime's `quantize_dynamic` (the weights of its `MatMul` and
`LSTM` nodes to int8, activations quantised on the fly) and `model.onnx` is the int8 graph;
the word tables are stored in int8 with one scale per row (`quantize_rows_int8`). Before the
folder is written, the runtime on the int8 graph and tables is compared with the runtime on the
fp32 ones on a check set (the sentences of the fp32 check, `CHECK_SENTENCES`, unless others are
given): if the share of its tokens whose tag changes exceeds `int8_tolerance` (default
`INT8_TOLERANCE`), the export is refused with the measured agreement, and nothing is written.

With `int4_tables=True` as well (`--int4-tables`, not the default), every word table is stored
at 4 bits instead (`quantize_rows_int4`: symmetric, one float32 scale per row, values from -7 to
7, packed two to a byte by `ldnet_runtime.export_format.pack_rows_int4`), in the same int8
check, and `tagger.json` is `format_version` 2 (`export_format.INT4_TABLES_FORMAT_VERSION`)
or newer: a folder is the newest version that one of its parts needs (4 for a character CNN's
graph of words, `export_format.WORD_NETWORK_FORMAT_VERSION`; 3 for boundary rows).
All tables rather than the LM's alone, because on CoNLL-03 dev (eng.testa) all at 4 bits keep
the F1 within 0.1 of the fp32 export's (`tests/onnx_export/int4_tables_conll03_test.py`).
"""

import json
import os
import shutil
import tarfile
import tempfile
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenCharactersIndexer
from allennlp.models import Model
from allennlp.models.archival import Archive, load_archive
from allennlp_models.tagging.models.crf_tagger import CrfTagger

from ldnet_allennlp.onnx_export.emissions import EmissionNetwork
from ldnet_allennlp.common.file_utils import file_sha256
from ldnet_allennlp.glove import vectors as glove_vectors
from ldnet_allennlp.glove.token_embedder import GloveTokenEmbedder, GloveTokenIndexer
from ldnet_allennlp.lm.token_indexers.dense_lm_tokens import DenseLMTokenIndexer
from ldnet_allennlp.tagging.viterbi import viterbi_transitions
from ldnet_allennlp.pretrained import resolve_archive
from ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor import SPACY_MODEL
from ldnet_allennlp.version import VERSION
from ldnet_runtime import export_format
from ldnet_runtime import glove as glove_runtime

OPSET = 17
MAX_LOGIT_DIFFERENCE = 1e-3
# int8: the node types whose weights `quantize_dynamic` quantises, and the largest share of the
# check set's tokens whose tag may differ from the fp32 graph's (0.005: at most 1 token in 200;
# on `CHECK_SENTENCES` alone, 41 tokens, that is none)
INT8_OP_TYPES = ("MatMul", "LSTM")
INT8_TOLERANCE = 0.005
INT8_GRAPH_STAGING = "model.int8.onnx"
# `tagger.json`'s `int8.word_tables`: how the word tables are stored
TABLES_INT8 = "int8, one float32 scale per row"
TABLES_INT4 = (
    "int4 packed two to a byte (value + 8; column 2j in byte j's low nibble, 2j + 1 in its high "
    "nibble), one float32 scale per row"
)

# The exporter's own check: a few sentences, with words the training data had and had not.
CHECK_SENTENCES = [
    "EU rejects German call to boycott British lamb .".split(),
    "Shares in Bank of Avalon rose 3 percent in Brazil".split(),
    ["Zxqwv", "Blorfington", "met", "Qqq", "in", "Ulaanbaatar", "!"],
    ["Reuters"],
    "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday , officials said .".split(),
]


@dataclass
class ExportReport:
    output_dir: str
    inputs: Dict[str, str]  # input name -> embedder kind
    num_tags: int
    graph_bytes: int
    total_bytes: int
    max_abs_logit_difference: float
    check_sentences: int
    seconds: float
    # `tagger.json`'s `int8` (how the graph was quantised and its check against fp32), or None
    int8: Optional[Dict[str, Any]] = None


def export_tagger(
    archive_file: str,
    output_dir: str,
    int8: bool = False,
    int8_tolerance: float = INT8_TOLERANCE,
    int8_check_sentences: Optional[Sequence[Sequence[str]]] = None,
    word_tables: bool = True,
    int4_tables: bool = False,
    lm_boundary_positions: bool = False,
) -> ExportReport:
    """
    Exports the CRF tagger in `archive_file` to the new folder `output_dir`. Errors are
    `ConfigurationError`s saying what to change.

    # Parameters

    archive_file : `str`
        The tagger's `model.tar.gz`, or `"pretrained:<name>"`.
    output_dir : `str`
        The folder to write; it must not exist, or be empty.
    int8 : `bool`, optional (default = `False`)
        Write the graph with its `MatMul` and `LSTM` weights quantised to int8 (`_quantize_int8`).
    int8_tolerance : `float`, optional (default = `INT8_TOLERANCE`)
        With `int8`: the largest share of the check set's tokens whose int8 tag may differ from
        the fp32 graph's; above it the export is refused and nothing is written.
    int8_check_sentences : `Sequence[Sequence[str]]`, optional (default = `CHECK_SENTENCES`)
        With `int8`: the tokenised sentences of that check.
    word_tables : `bool`, optional (default = `True`)
        Take what depends on the word alone out of the graph, as tables (the module docstring).
    int4_tables : `bool`, optional (default = `False`)
        With `int8` and `word_tables`: store the word tables at 4 bits (`quantize_rows_int4`).
    lm_boundary_positions : `bool`, optional (default = `False`)
        For a `layer_selection` embedder whose biLM adds sentence boundaries: keep them as two
        positions of the LMs' input around each sentence (as `dense_lm_scalar_mix` does), rather
        than starting the LMs from the states the boundaries leave (two LSTM steps fewer per LM
        layer; `emissions._BiLmLayers`).

    # Returns

    An `ExportReport`: the folder, its inputs and sizes, its check (with `int8`, the int8 one).
    """
    check_sentences = _int8_check_set(
        int8, int8_tolerance, int8_check_sentences, int4_tables, word_tables
    )
    started = time.perf_counter()
    output = Path(output_dir)
    _check_output_dir(output)
    archive_path, archive, label_encoding = _load_tagger_archive(archive_file)
    model = archive.model
    network = EmissionNetwork.from_tagger(
        model, word_tables=word_tables, boundary_states=not lm_boundary_positions
    )
    reader = archive.validation_dataset_reader
    inputs = _input_specs(network, _token_indexers(reader, archive_file), model, archive_file)
    _table_specs(network, inputs)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.partial-", dir=output.parent))
    try:
        tagger = _write_folder(staging, network, inputs, model, label_encoding)
        _write_tokenizer_rules(staging)
        tagger["made_by"] = _made_by(archive_file, archive_path)
        _write_json(staging / export_format.TAGGER_FILE, tagger)
        difference = _check(staging, model, reader, archive_file)
        tagger["check"] = {
            "sentences": len(CHECK_SENTENCES),
            "same_tags": True,
            "max_abs_logit_difference": difference,
        }
        if int8:
            tagger["int8"] = _quantize_int8(
                staging, tagger, check_sentences, int8_tolerance, archive_file, int4_tables
            )
        _write_json(staging / export_format.TAGGER_FILE, tagger)
        _rename_into_place(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _report(output, inputs, model, tagger, time.perf_counter() - started)


def _report(
    output: Path, inputs: List[Dict[str, Any]], model: Model, tagger: Dict[str, Any], seconds: float
) -> ExportReport:
    """The `ExportReport` of the folder `output`, written from `model` with `tagger.json`'s
    content `tagger`."""
    return ExportReport(
        output_dir=str(output),
        inputs={spec["name"]: spec["kind"] for spec in inputs},
        num_tags=len(model.vocab.get_index_to_token_vocabulary(model.label_namespace)),
        graph_bytes=(output / export_format.GRAPH_FILE).stat().st_size,
        total_bytes=sum(path.stat().st_size for path in output.iterdir()),
        max_abs_logit_difference=tagger["check"]["max_abs_logit_difference"],
        check_sentences=tagger["check"]["sentences"],
        seconds=seconds,
        int8=tagger.get("int8"),
    )


def _int8_check_set(
    int8: bool,
    int8_tolerance: float,
    int8_check_sentences: Optional[Sequence[Sequence[str]]],
    int4_tables: bool = False,
    word_tables: bool = True,
) -> List[List[str]]:
    """
    The tokenised sentences of the int8 check (`export_tagger`'s arguments of the same names),
    once `int8_tolerance` is checked to be a share, with `int8` the set to be non-empty, and
    `int4_tables` to go with `int8` and `word_tables`.
    """
    if int4_tables and not (int8 and word_tables):
        raise ConfigurationError(
            "--int4-tables stores the word tables of the int8 export at 4 bits: it goes with "
            "neither --fp32 nor --no-word-tables."
        )
    if not 0.0 <= int8_tolerance <= 1.0:
        raise ConfigurationError(
            f"--int8-tolerance is a share of tokens, from 0 to 1; got {int8_tolerance}."
        )
    check_sentences = [list(s) for s in (int8_check_sentences or CHECK_SENTENCES) if s]
    if int8 and not check_sentences:
        raise ConfigurationError("the int8 check set has no sentence.")
    return check_sentences


def _load_tagger_archive(archive_file: str) -> Tuple[str, Archive, str]:
    """
    The archive's path, the archive (its model in eval mode) and the tagger's label encoding,
    once checked to be a CRF tagger that the runtime can run.
    """
    archive_path = resolve_archive(archive_file)
    if not os.path.isfile(archive_path):
        raise ConfigurationError(f"{archive_file}: no such archive file ({archive_path}).")
    try:
        archive = load_archive(archive_path, cuda_device=-1)
    except (OSError, EOFError, tarfile.TarError, zlib.error) as error:
        raise ConfigurationError(
            f"{archive_file} could not be loaded as an AllenNLP model archive: {error}"
        ) from error
    model = archive.model
    model.eval()
    if not isinstance(model, CrfTagger):
        raise ConfigurationError(
            f"{archive_file} holds a {type(model).__name__}, not a CRF tagger "
            "(ldnet_crf_tagger or crf_tagger): ldnet-export exports taggers only."
        )
    if model.top_k not in (None, 1):
        raise ConfigurationError(
            f"{archive_file}: the tagger decodes with top_k {model.top_k}; the runtime decodes "
            "the best path only (top_k 1)."
        )
    label_encoding = getattr(model, "label_encoding", None) or "BIOUL"
    if label_encoding not in export_format.LABEL_ENCODINGS:
        raise ConfigurationError(
            f"{archive_file}: label_encoding {label_encoding!r} has no span decoder."
        )
    return archive_path, archive, label_encoding


def _token_indexers(reader: Any, archive_file: str) -> Dict[str, Any]:
    indexers = getattr(reader, "_token_indexers", None)
    if not isinstance(indexers, dict):
        raise ConfigurationError(
            f"{archive_file}: the dataset reader ({type(reader).__name__}) has no token "
            "indexers to export."
        )
    return indexers


def _write_folder(
    staging: Path,
    network: EmissionNetwork,
    inputs: List[Dict[str, Any]],
    model: Model,
    label_encoding: str,
) -> Dict[str, Any]:
    """
    Writes the graph, the vocabularies, the CRF and (for a GloVe tagger) GloVe's word index
    into `staging`; returns `tagger.json`'s content so far (without `made_by` and `check`).
    """
    _write_graph(network, inputs, staging / export_format.GRAPH_FILE)
    namespaces = sorted({spec["indexer"]["namespace"] for spec in inputs} - {None})
    vocabularies = _vocabularies(model.vocab, namespaces)
    tables = (
        _write_word_tables(staging, network, inputs, vocabularies) if network.word_parts else {}
    )
    _write_json(staging / export_format.VOCABULARIES_FILE, vocabularies)
    _write_json(staging / export_format.CRF_FILE, _crf(model))
    if any(spec["kind"] == "glove_embedding" for spec in inputs):
        _write_glove_index(staging)
    tagger = {
        "format": export_format.FORMAT,
        "format_version": _format_version(inputs),
        "label_encoding": label_encoding,
        "spacy_model": SPACY_MODEL,
        "inputs": inputs,
    }
    if tables:
        tagger["word_tables"] = {"file": export_format.WORD_TABLES_FILE, "tables": tables}
    return tagger


WORDS_KEY = "word_table_words:{}"  # vocabularies.json's key of a character table's words
WORD_NETWORK_FILE = "word_network_{}.onnx"  # a character table's network


def _table_specs(network: EmissionNetwork, inputs: List[Dict[str, Any]]) -> None:
    """Turns the indexer specs of the inputs fed from word tables into `word_table` and
    `character_table` specs (`ldnet_runtime/export_format.py`)."""
    for spec in inputs:
        key, indexer = spec["name"], spec["indexer"]
        if key not in network.word_parts:
            continue
        if spec["kind"] == "character_encoding":
            indexer.update(
                type="character_table",
                words=WORDS_KEY.format(key),
                table=key,
                network=WORD_NETWORK_FILE.format(key),
            )
        else:
            indexer.update(type="word_table", table=key)
            boundaries = network.boundary_vectors(key)
            if boundaries is not None:
                indexer["sentence_boundaries"] = boundaries.tolist()


def _write_word_tables(
    staging: Path,
    network: EmissionNetwork,
    inputs: List[Dict[str, Any]],
    vocabularies: Dict[str, List[str]],
) -> Dict[str, Dict[str, Any]]:
    """
    Computes the word tables (`word_tables.npz`) and writes the character CNNs' graphs; adds
    each character table's words to `vocabularies`. Returns `tagger.json`'s `word_tables.tables`:
    per table its rows, width and stored dtype.
    """
    tables: Dict[str, numpy.ndarray] = {}
    words = sorted(
        {
            word
            for spec in inputs
            if spec["indexer"]["type"] == "word_table"
            for word in vocabularies[spec["indexer"]["namespace"]]
        }
    )
    for spec in inputs:
        key, indexer = spec["name"], spec["indexer"]
        part = network.word_parts[key] if key in network.word_parts else None
        if indexer["type"] == "word_table":
            ids = torch.arange(len(vocabularies[indexer["namespace"]]))
            with torch.no_grad():
                tables[key] = part(ids).float().numpy()
        elif indexer["type"] == "character_table":
            graph = staging / indexer["network"]
            _write_word_network(network, key, graph)
            vocabularies[indexer["words"]] = words
            characters = vocabularies[indexer["namespace"]]
            tables[key] = _character_table(indexer, characters, words, graph)
    stored = {key: _lossless_dtype(table) for key, table in tables.items()}
    numpy.savez(staging / export_format.WORD_TABLES_FILE, **stored)
    return {
        key: {"rows": int(table.shape[0]), "dim": int(table.shape[1]), "dtype": str(table.dtype)}
        for key, table in stored.items()
    }


def _lossless_dtype(table: numpy.ndarray) -> numpy.ndarray:
    """`table` in float16 where that changes no value, else in float32."""
    half = table.astype(numpy.float16)
    return half if numpy.array_equal(half.astype(numpy.float32), table) else table


def _write_word_network(network: EmissionNetwork, key: str, path: Path) -> None:
    """`network.word_parts[key]` (a character CNN) as a graph of words: character ids
    `(num_words, num_chars)` int64 -> `(num_words, dim)` float32."""
    import onnx

    _, example = network.word_part_example(key, 5)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            network.word_parts[key],
            (example,),
            str(path),
            dynamo=False,
            input_names=["characters"],
            output_names=["vectors"],
            dynamic_axes={
                "characters": {0: "num_words", 1: "num_chars"},
                "vectors": {0: "num_words"},
            },
            opset_version=OPSET,
            do_constant_folding=True,
        )
    onnx.checker.check_model(str(path))


WORDS_PER_RUN = 1024  # words per run of a character CNN while its table is computed


def _character_table(
    indexer: Dict[str, Any], characters: List[str], words: List[str], graph: Path
) -> numpy.ndarray:
    """The character CNN's output for each of `words` `(len(words), dim)`, computed by the
    runtime's own indexer and onnxruntime on `graph`, as the runtime computes it for a word
    outside the table."""
    import onnxruntime

    from ldnet_runtime.exported_tagger import session_options
    from ldnet_runtime.indexing import CharacterIndexer

    character_ids = CharacterIndexer(indexer, characters)
    session = onnxruntime.InferenceSession(
        str(graph), session_options(1), providers=["CPUExecutionProvider"]
    )
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    table: Optional[numpy.ndarray] = None
    for first in range(0, len(order), WORDS_PER_RUN):
        rows = order[first : first + WORDS_PER_RUN]
        (vectors,) = session.run(
            None, {"characters": character_ids.words([words[i] for i in rows])}
        )
        if table is None:
            table = numpy.zeros((len(words), vectors.shape[-1]), dtype=numpy.float32)
        table[rows] = vectors
    if table is None:  # no word: the table's width from one run
        (vectors,) = session.run(None, {"characters": character_ids.words(["a"])})
        table = numpy.zeros((0, vectors.shape[-1]), dtype=numpy.float32)
    return table


def _write_tokenizer_rules(folder: Path) -> None:
    """
    Writes `tokenizer.json`: the rules of the predictor's spaCy tokenizer (`SPACY_MODEL`, loaded
    without its components as the runtime's `SpacyTokenizer` loads it), which the runtime's
    `RuleTokenizer` replays on raw sentences without importing spaCy.
    """
    from ldnet_runtime.rule_tokenizer import tokenizer_rules
    from ldnet_runtime.tokenizer import SpacyTokenizer

    rules = tokenizer_rules(SpacyTokenizer(SPACY_MODEL).nlp)
    _write_json(folder / export_format.TOKENIZER_FILE, rules)


def _made_by(archive_file: str, archive_path: str) -> Dict[str, Any]:
    """`tagger.json`'s `made_by`: the archive (and its sha256) and the versions that exported it."""
    return {
        "archive": str(archive_file),
        "archive_sha256": file_sha256(archive_path),
        "ldnet_allennlp": VERSION,
        "torch": torch.__version__,
        "exporter": "torch.onnx.export (TorchScript-based, dynamo=False)",
        "onnx_opset": OPSET,
    }


def _rename_into_place(staging: Path, output: Path) -> None:
    """Gives the finished `staging` folder the usual permissions and renames it to `output`."""
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's folder is private
    if output.exists():
        output.rmdir()  # empty (checked)
    os.rename(staging, output)


def _check_output_dir(output: Path) -> None:
    if output.exists() and not output.is_dir():
        raise ConfigurationError(f"--output-dir {output} exists and is not a folder.")
    if output.is_dir() and any(output.iterdir()):
        raise ConfigurationError(
            f"--output-dir {output} exists and is not empty; name a new folder (nothing in it "
            "is replaced)."
        )


def _input_specs(
    network: EmissionNetwork, indexers: Dict[str, Any], model: Model, archive_file: str
) -> List[Dict[str, Any]]:
    """`tagger.json`'s `inputs`: per graph input (after the mask), its indexer's settings."""
    if sorted(indexers) != network.input_keys:
        raise ConfigurationError(
            f"{archive_file}: the dataset reader's token indexers {sorted(indexers)} do not "
            f"match the text field embedder's keys {network.input_keys}."
        )
    specs = []
    for key in network.input_keys:
        kind = network.input_kinds[key]
        indexer = indexers[key]
        where = f"{archive_file}: the token indexer {key!r} ({type(indexer).__name__})"
        if kind == "glove_embedding":
            if not isinstance(indexer, GloveTokenIndexer):
                raise ConfigurationError(f"{where} does not feed a glove_embedding.")
            spec = _glove_spec(getattr(model.text_field_embedder, f"token_embedder_{key}"))
        elif kind == "character_encoding":
            spec = _characters_spec(indexer, where, model.vocab)
        else:
            spec = _single_id_spec(indexer, where, model.vocab)
        specs.append({"name": key, "kind": kind, "indexer": spec})
    return specs


def _oov_id(vocab: Vocabulary, namespace: str):
    return vocab.get_token_to_index_vocabulary(namespace).get(vocab._oov_token)


def _single_id_spec(indexer: Any, where: str, vocab: Vocabulary) -> Dict[str, Any]:
    if type(indexer) not in (SingleIdTokenIndexer, DenseLMTokenIndexer):
        raise ConfigurationError(f"{where} is not a single_id or dense_lm_tokens indexer.")
    if indexer._start_tokens or indexer._end_tokens or indexer._feature_name != "text":
        raise ConfigurationError(
            f"{where} has start_tokens, end_tokens or a feature_name other than 'text', which "
            "ldnet-export does not export."
        )
    return {
        "type": "dense_lm_tokens" if isinstance(indexer, DenseLMTokenIndexer) else "single_id",
        "namespace": indexer.namespace,
        "lowercase_tokens": bool(indexer.lowercase_tokens),
        "oov_id": _oov_id(vocab, indexer.namespace),
    }


def _characters_spec(indexer: Any, where: str, vocab: Vocabulary) -> Dict[str, Any]:
    if type(indexer) is not TokenCharactersIndexer:
        raise ConfigurationError(f"{where} does not feed a character_encoding.")
    tokenizer = indexer._character_tokenizer
    if (
        indexer._start_tokens
        or indexer._end_tokens
        or tokenizer._byte_encoding is not None
        or tokenizer._lowercase_characters
        or tokenizer._start_tokens
        or tokenizer._end_tokens
    ):
        raise ConfigurationError(
            f"{where} has start/end tokens or a character tokenizer other than the default, "
            "which ldnet-export does not export."
        )
    return {
        "type": "characters",
        "namespace": indexer._namespace,
        "min_padding_length": int(indexer._min_padding_length),
        "oov_id": _oov_id(vocab, indexer._namespace),
    }


def _glove_spec(embedder: GloveTokenEmbedder) -> Dict[str, Any]:
    fingerprint = embedder.glove_fingerprint.tolist()
    index_file = glove_vectors.glove_data_dir() / glove_vectors.INDEX_FILE
    return {
        "type": "glove_tokens",
        "namespace": None,
        "package": glove_vectors.DISTRIBUTION,
        "num_words": int(fingerprint[0]),
        "dim": embedder.get_output_dim(),
        "fingerprint": fingerprint,
        "index_sha256": file_sha256(str(index_file)),
        "words_file": glove_runtime.WORDS_FILE,
        "rows_file": glove_runtime.ROWS_FILE,
        "unknown_vector": embedder.unknown_vector.detach().float().tolist(),
    }


def _write_glove_index(folder: Path) -> None:
    """
    GloVe's word -> row index for the runtime: the installed package's words, sorted, one per
    line (`glove_words.txt`), and their rows (`glove_rows.npy`, int32).
    """
    words = glove_vectors.load_glove_vectors().words
    if any("\n" in word for word in words):
        raise ConfigurationError("a GloVe word contains a line break; it cannot be exported.")
    order = sorted(range(len(words)), key=words.__getitem__)
    with open(folder / glove_runtime.WORDS_FILE, "w", encoding="utf-8") as words_file:
        words_file.write("\n".join(words[row] for row in order))
    numpy.save(folder / glove_runtime.ROWS_FILE, numpy.asarray(order, dtype=numpy.int32))


def _vocabularies(vocab: Vocabulary, namespaces: List[str]) -> Dict[str, List[str]]:
    vocabularies = {}
    for namespace in namespaces:
        index_to_token = vocab.get_index_to_token_vocabulary(namespace)
        vocabularies[namespace] = [index_to_token[i] for i in range(len(index_to_token))]
    return vocabularies


def _crf(model: Model) -> Dict[str, Any]:
    crf = model.crf
    index_to_tag = model.vocab.get_index_to_token_vocabulary(model.label_namespace)
    if crf.include_start_end_transitions:
        start, end = crf.start_transitions, crf.end_transitions
        transitions = viterbi_transitions(crf.transitions, crf._constraint_mask, start, end)
    else:
        start = end = None
        transitions = viterbi_transitions(crf.transitions, crf._constraint_mask)
    return {
        "tags": [index_to_tag[i] for i in range(crf.num_tags)],
        "include_start_end_transitions": bool(crf.include_start_end_transitions),
        "transitions": crf.transitions.detach().tolist(),
        "start_transitions": None if start is None else start.detach().tolist(),
        "end_transitions": None if end is None else end.detach().tolist(),
        "constraint_mask": crf._constraint_mask.detach().long().tolist(),
        "viterbi_transitions": transitions.tolist(),
    }


def _write_graph(network: EmissionNetwork, inputs: List[Dict[str, Any]], path: Path) -> None:
    import onnx

    glove_dims = {
        spec["name"]: spec["indexer"]["dim"] for spec in inputs if "dim" in spec["indexer"]
    }
    min_chars = max([spec["indexer"].get("min_padding_length", 0) for spec in inputs] + [5])
    example = network.example_inputs(min_chars, glove_dims)
    dynamic_axes = {export_format.MASK_INPUT: {0: "batch", 1: "num_tokens"}}
    for spec in inputs:
        axes = {0: "batch", 1: "num_tokens"}
        if "sentence_boundaries" in spec["indexer"]:
            axes[1] = "num_tokens_with_boundaries"
        if spec["indexer"]["type"] == "characters":
            axes[2] = "num_chars"
        dynamic_axes[spec["name"]] = axes
    dynamic_axes[export_format.LOGITS_OUTPUT] = {0: "batch", 1: "num_tokens"}
    with warnings.catch_warnings(), torch.no_grad():
        # the TorchScript-based exporter's deprecation notice, and the tracer's notes on the
        # eager code inside each LSTM node (`emissions._LstmNode`, whose symbolic replaces it)
        warnings.simplefilter("ignore")
        torch.onnx.export(
            network,
            example,
            str(path),
            dynamo=False,
            input_names=network.input_names,
            output_names=[export_format.LOGITS_OUTPUT],
            dynamic_axes=dynamic_axes,
            opset_version=OPSET,
            do_constant_folding=True,
        )
    onnx.checker.check_model(str(path))


def _check(staging: Path, model: Model, reader: Any, archive_file: str) -> float:
    """
    The runtime on the new folder against the tagger on `CHECK_SENTENCES`: the same tags, and
    the largest emission difference (a `ConfigurationError` if the tags differ or it exceeds
    `MAX_LOGIT_DIFFERENCE`).
    """
    from ldnet_runtime.exported_tagger import Tagger

    instances = []
    for tokens in CHECK_SENTENCES:
        instance = reader.text_to_instance([Token(t) for t in tokens])
        reader.apply_token_indexers(instance)
        instances.append(instance)
    with torch.no_grad():
        outputs = model.forward_on_instances(instances)
    runtime = Tagger(staging, threads=1)
    logits, lengths = runtime.emissions(CHECK_SENTENCES)
    tags = runtime.tag_tokens(CHECK_SENTENCES)
    difference = 0.0
    for b, (output, length) in enumerate(zip(outputs, lengths)):
        expected = output["logits"][:length]
        difference = max(difference, float(abs(logits[b, :length] - expected).max()))
        if tags[b] != output["tags"]:
            raise ConfigurationError(
                f"{archive_file}: the exported tagger tags {CHECK_SENTENCES[b]} as {tags[b]}, "
                f"AllenNLP as {output['tags']} (largest emission difference {difference:.3g}); "
                "please report this with the archive."
            )
    if difference > MAX_LOGIT_DIFFERENCE:
        raise ConfigurationError(
            f"{archive_file}: the exported graph's emissions differ from the tagger's by up to "
            f"{difference:.3g} (more than {MAX_LOGIT_DIFFERENCE}); please report this with the "
            "archive."
        )
    return difference


def quantize_dynamic_int8(fp32_graph: Path, int8_graph: Path) -> None:
    """
    onnxruntime's `quantize_dynamic` of `fp32_graph` into `int8_graph`: the weights of its
    `INT8_OP_TYPES` nodes as signed int8 (one scale per tensor), activations quantised at run time.
    """
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    # its advice to run onnxruntime's pre-processing first (shape inference) goes to the root
    # logger as a warning; the check below is what decides whether the result is good
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            fp32_graph,
            int8_graph,
            op_types_to_quantize=list(INT8_OP_TYPES),
            weight_type=QuantType.QInt8,
        )
    finally:
        root.setLevel(level)


def _quantize_int8(
    staging: Path,
    tagger: Dict[str, Any],
    sentences: List[List[str]],
    tolerance: float,
    archive_file: str,
    int4_tables: bool = False,
) -> Dict[str, Any]:
    """
    Replaces the (checked) fp32 `model.onnx` in `staging` by its int8 quantisation
    (`quantize_dynamic_int8`), and its word tables by their int8 (or with `int4_tables` int4)
    quantisation (`_quantize_word_tables`, which records it in `tagger`, `tagger.json`'s
    content), once the runtime on them tags `sentences` as on the fp32 graph, up to `tolerance`
    (the share of tokens whose tag may differ); else a `ConfigurationError` with the measured
    agreement. Returns `tagger.json`'s `int8`: the method and the check.
    """
    from ldnet_runtime.exported_tagger import Tagger

    fp32_graph = staging / export_format.GRAPH_FILE
    int8_graph = staging / INT8_GRAPH_STAGING
    fp32 = Tagger(staging, threads=1)
    fp32_logits = [fp32.emissions([tokens])[0][0] for tokens in sentences]
    fp32_tags = fp32.tag_tokens(sentences)
    fp32_bytes = fp32_graph.stat().st_size
    del fp32
    quantize_dynamic_int8(fp32_graph, int8_graph)
    os.replace(int8_graph, fp32_graph)
    tables = _quantize_word_tables(staging, tagger, int4_tables)
    int8 = Tagger(staging, threads=1)
    int8_tags = int8.tag_tokens(sentences)
    logit_difference = max(
        float(abs(int8.emissions([tokens])[0][0] - logits).max())
        for tokens, logits in zip(sentences, fp32_logits)
    )
    tokens = sum(len(tags) for tags in fp32_tags)
    differing = sum(
        a != b for tags, other in zip(fp32_tags, int8_tags) for a, b in zip(tags, other)
    )
    agreement = 1.0 - differing / tokens
    if differing / tokens > tolerance:
        raise ConfigurationError(
            f"{archive_file}: the int8 graph tags {differing} of the check set's {tokens} tokens "
            f"({len(sentences)} sentences) differently from the fp32 graph: tag agreement "
            f"{agreement:.4%}, {differing / tokens:.4%} differ, more than the tolerance "
            f"{tolerance:.4%} (--int8-tolerance); largest emission difference "
            f"{logit_difference:.3g}. Nothing was written: export with --fp32, or accept "
            "more difference with a larger --int8-tolerance."
        )
    return {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "op_types": list(INT8_OP_TYPES),
        "weight_type": "QInt8",
        "word_tables": (TABLES_INT4 if int4_tables else TABLES_INT8) if tables else None,
        "fp32_graph_bytes": fp32_bytes,
        "check": {
            "against": "the fp32 graph on the runtime",
            "sentences": len(sentences),
            "tokens": tokens,
            "tokens_with_other_tags": differing,
            "tag_agreement": agreement,
            "tolerance": tolerance,
            "max_abs_logit_difference": logit_difference,
        },
    }


def quantize_rows_int8(table: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """
    `table` `(rows, dim)` as int8 rows and one float32 scale per row (symmetric: the row's
    largest magnitude is 127), such that `int8 row * scale` is within `scale / 2` of the row.
    """
    table = table.astype(numpy.float32)
    scale = numpy.abs(table).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    rows = numpy.clip(numpy.rint(table / scale[:, None]), -127, 127).astype(numpy.int8)
    return rows, scale.astype(numpy.float32)


def quantize_rows_int4(table: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """
    `table` `(rows, dim)` as int4 values (int8 from -7 to 7) and one float32 scale per row
    (symmetric: the row's largest magnitude is 7), such that `values * scale` is within
    `scale / 2` of the row.
    """
    table = table.astype(numpy.float32)
    scale = numpy.abs(table).max(axis=1) / 7.0
    scale[scale == 0] = 1.0
    rows = numpy.clip(numpy.rint(table / scale[:, None]), -7, 7).astype(numpy.int8)
    return rows, scale.astype(numpy.float32)


def _quantize_word_tables(
    staging: Path, tagger: Dict[str, Any], int4_tables: bool = False
) -> List[str]:
    """
    Stores every word table of `staging`'s `word_tables.npz` as int8 rows with their scales
    (`quantize_rows_int8`), or with `int4_tables` as packed int4 rows with theirs
    (`quantize_rows_int4`, `export_format.pack_rows_int4`), and writes `tagger` (`tagger.json`)
    with the tables' dtype and its `format_version` (`_format_version`). Returns the tables' names
    (none for an export without tables).
    """
    path = staging / export_format.WORD_TABLES_FILE
    if not path.is_file():
        return []
    with numpy.load(path, allow_pickle=False) as stored:
        tables = {name: stored[name] for name in stored.files}
    quantized: Dict[str, numpy.ndarray] = {}
    for name, table in tables.items():
        scale_name = name + export_format.TABLE_SCALE_SUFFIX
        if int4_tables:
            rows, quantized[scale_name] = quantize_rows_int4(table)
            quantized[name] = export_format.pack_rows_int4(rows)
        else:
            quantized[name], quantized[scale_name] = quantize_rows_int8(table.astype(numpy.float32))
    numpy.savez(path, **quantized)
    for description in tagger["word_tables"]["tables"].values():
        description["dtype"] = "int4" if int4_tables else "int8"
    tagger["format_version"] = _format_version(tagger["inputs"], int4_tables)
    _write_json(staging / export_format.TAGGER_FILE, tagger)
    return sorted(tables)


def _format_version(inputs: List[Dict[str, Any]], int4_tables: bool = False) -> int:
    """
    `tagger.json`'s `format_version` for a folder with the graph inputs `inputs`: the newest
    version one of its parts needs (`export_format`): a character CNN's graph of words (4),
    the LMs' boundary rows (3), int4 word tables (2), else 1.
    """
    needs = [export_format.FORMAT_VERSION]
    if int4_tables:
        needs.append(export_format.INT4_TABLES_FORMAT_VERSION)
    if any("sentence_boundaries" in spec["indexer"] for spec in inputs):
        needs.append(export_format.BOUNDARY_ROWS_FORMAT_VERSION)
    if any(spec["indexer"]["type"] == "character_table" for spec in inputs):
        needs.append(export_format.WORD_NETWORK_FORMAT_VERSION)
    return max(needs)


def _write_json(path: Path, content: Dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as json_file:
        json.dump(content, json_file)
