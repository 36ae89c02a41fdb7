"""
Dataset readers for Tang et al. distillation: GLUE-style TSV files (the teacher's and the plain
student's training data, every dev set) and the transfer set written by
`allennlp ldnet-distill-transfer-set` (JSON lines with `teacher_logits`).

Both readers build the same instances (`DistillationReader.text_to_instance`):

* single sentence: `tokens`, optional `label`;
* sentence pair, `combine_pair=False` (the siamese student): `premise`, `hypothesis`, `label`;
* sentence pair, `combine_pair=True` (a transformer teacher through `basic_classifier`): one
  `tokens` field `[CLS] premise [SEP] hypothesis [SEP]` built with the tokenizer's
  `add_special_tokens` (so give a `pretrained_transformer` tokenizer `add_special_tokens: false`);
* transfer-set rows add `teacher_logits` (`(num_labels,)`) and `metadata.teacher_labels`, the
  label order of those logits (the student maps them onto its own label vocabulary), and
  `metadata.transfer_set`, the file's path (named in the student's label-mismatch error);
* with `keep_text=True` (the student's online teacher, `distillation_student.teacher_archive`)
  `metadata.texts` holds the raw sentence(s), `(sentence,)` or `(premise, hypothesis)`, from
  which the student's model computes the teacher's logits. Only the student accepts `metadata`:
  never set it for a teacher (`basic_classifier`).

Bad input is a `ConfigurationError` that names the file and line: a line that is not UTF-8, a
row with the wrong number of columns, an empty sentence, a file without any data row (empty,
header only, or no row matching a `#column=value` filter), a transfer-set row that is not a JSON
object, has no `teacher_logits`, a number of logits different from the header's label count,
logits that are not finite numbers, a sentence that is not a string, or a gold label that is not
one of the header's teacher labels.
"""

import json
import logging
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import Field, LabelField, MetadataField, TensorField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import Tokenizer, WhitespaceTokenizer

from ldnet_allennlp.common.file_utils import utf8_lines
from ldnet_allennlp.distillation.transfer_set import HEADER_KEY

logger = logging.getLogger(__name__)


def split_row_filter(file_path: str) -> Tuple[str, Optional[Tuple[str, str]]]:
    """
    `"SICK.txt#SemEval_set=TRAIN"` → `("SICK.txt", ("SemEval_set", "TRAIN"))`: a `#column=value`
    suffix keeps only the rows whose `column` equals `value` (SICK keeps its splits in one file).
    """
    if "#" not in file_path:
        return file_path, None
    path, selector = file_path.rsplit("#", 1)
    if "=" not in selector:
        raise ConfigurationError(
            f"Data path {file_path!r}: the part after '#' must be 'column=value', got {selector!r}"
        )
    column, value = selector.split("=", 1)
    return path, (column, value)


def read_tsv_rows(file_path: str) -> Iterator[Tuple[str, int, Dict[str, str]]]:
    """
    `(path, line_number, row)` for every data row of a TSV file with a header line, where `row`
    maps header names to cell text. Supports the `#column=value` row filter.
    """
    path, row_filter = split_row_filter(file_path)
    lines = utf8_lines(path)
    try:
        _, header_line = next(lines)
    except StopIteration:
        raise ConfigurationError(f"{path} is empty; expected a header line")
    header = header_line.split("\t")
    if row_filter is not None and row_filter[0] not in header:
        raise ConfigurationError(f"{file_path}: filter column {row_filter[0]!r} not in {header}")
    for line_number, line in lines:
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ConfigurationError(
                f"{path}, line {line_number}: {len(cells)} tab-separated columns, "
                f"the header has {len(header)}"
            )
        row = dict(zip(header, cells))
        if row_filter is not None and row[row_filter[0]] != row_filter[1]:
            continue
        yield path, line_number, row


class DistillationReader(DatasetReader):
    """
    Shared instance building for the TSV and transfer-set readers (see the module docstring).

    # Parameters

    tokenizer : `Tokenizer`, optional (default = `WhitespaceTokenizer()`)
        GLUE SST-2 is already tokenised, so whitespace splitting is the default.
    token_indexers : `Dict[str, TokenIndexer]`, optional
        Default: `{"tokens": SingleIdTokenIndexer(lowercase_tokens=True)}`.
    combine_pair : `bool`, optional (default = `False`)
        Put both sentences of a pair in one `tokens` field (transformer teacher).
    keep_text : `bool`, optional (default = `False`)
        Keep the raw sentence(s) in `metadata.texts` (student with an online teacher).
    """

    def __init__(
        self,
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        combine_pair: bool = False,
        keep_text: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self._tokenizer = tokenizer or WhitespaceTokenizer()
        self._token_indexers = token_indexers or {
            "tokens": SingleIdTokenIndexer(lowercase_tokens=True)
        }
        self._combine_pair = combine_pair
        self._keep_text = keep_text

    def _check_text(self, text: Optional[str], where: str, what: str) -> str:
        if text is not None and not isinstance(text, str):
            raise ConfigurationError(f"{where}: the {what} is not a string: {text!r}")
        if text is None or not text.strip():
            raise ConfigurationError(f"{where}: empty {what}")
        return text.strip()

    def text_to_instance(  # type: ignore
        self,
        sentence: Optional[str] = None,
        premise: Optional[str] = None,
        hypothesis: Optional[str] = None,
        label: Optional[str] = None,
        teacher_logits: Optional[Sequence[float]] = None,
        teacher_labels: Optional[Sequence[str]] = None,
        transfer_set: Optional[str] = None,
    ) -> Instance:
        """
        Either `sentence`, or `premise` and `hypothesis`. `teacher_logits` come with
        `teacher_labels` (their label order) and `transfer_set` (the file they were read from).
        """
        fields: Dict[str, Field] = {}
        metadata: Dict[str, Any] = {}
        if sentence is not None:
            tokens = self._tokenizer.add_special_tokens(self._tokenizer.tokenize(sentence))
            fields["tokens"] = TextField(tokens, self._token_indexers)
            if self._keep_text:
                metadata["texts"] = (sentence,)
        elif premise is not None and hypothesis is not None:
            if self._keep_text:
                metadata["texts"] = (premise, hypothesis)
            first = self._tokenizer.tokenize(premise)
            second = self._tokenizer.tokenize(hypothesis)
            if self._combine_pair:
                fields["tokens"] = TextField(
                    self._tokenizer.add_special_tokens(first, second), self._token_indexers
                )
            else:
                fields["premise"] = TextField(
                    self._tokenizer.add_special_tokens(first), self._token_indexers
                )
                fields["hypothesis"] = TextField(
                    self._tokenizer.add_special_tokens(second), self._token_indexers
                )
        else:
            raise ConfigurationError(
                "An instance needs a 'sentence' or a 'premise' and 'hypothesis'"
            )
        if label is not None:
            fields["label"] = LabelField(str(label))
        if teacher_logits is not None:
            fields["teacher_logits"] = TensorField(
                numpy.asarray(teacher_logits, dtype=numpy.float32)
            )
            metadata["teacher_labels"] = tuple(teacher_labels or ())
            metadata["transfer_set"] = transfer_set
        if metadata:
            fields["metadata"] = MetadataField(metadata)
        return Instance(fields)


@DatasetReader.register("distillation_tsv")
class DistillationTsvReader(DistillationReader):
    """
    GLUE-format TSV files with a header line: SST-2 (`sentence`, `label`), SICK (`sentence_A`,
    `sentence_B`, `entailment_label`, one file, splits chosen with a `#SemEval_set=TRAIN` path
    suffix), MRPC (`#1 String`, `#2 String`, `Quality`), RTE (`sentence1`, `sentence2`, `label`).

    # Parameters

    sentence_column : `str`, optional (default = `"sentence"`)
        Column of a single-sentence task; ignored when `premise_column` is set.
    premise_column, hypothesis_column : `str`, optional
        The two sentence columns of a pair task.
    label_column : `str`, optional (default = `"label"`)
        A file without this column (an unlabelled test set) gives instances without labels.
    tokenizer, token_indexers, combine_pair, keep_text
        See `DistillationReader`. `keep_text: true` is the training reader of a student with an
        online teacher (`sst2_distilled_online.jsonnet`); such a student's rows without a gold
        label take the teacher's argmax as their hard label.
    """

    def __init__(
        self,
        sentence_column: str = "sentence",
        premise_column: Optional[str] = None,
        hypothesis_column: Optional[str] = None,
        label_column: str = "label",
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        combine_pair: bool = False,
        keep_text: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(tokenizer, token_indexers, combine_pair, keep_text, **kwargs)
        if (premise_column is None) != (hypothesis_column is None):
            raise ConfigurationError("Set both premise_column and hypothesis_column, or neither")
        self.sentence_column = sentence_column
        self.premise_column = premise_column
        self.hypothesis_column = hypothesis_column
        self.label_column = label_column

    @property
    def is_pair(self) -> bool:
        return self.premise_column is not None

    def read_examples(self, file_path: str) -> Iterator[Tuple[str, Tuple[str, ...], Optional[str]]]:
        """
        `(where, texts, label)` per row: `where` is `"path, line N"`, `texts` holds one sentence
        (or two for pairs), stripped and checked non-empty. The transfer-set builder reads
        through this too.
        """
        columns = (
            [self.premise_column, self.hypothesis_column]
            if self.is_pair
            else [self.sentence_column]
        )
        rows = 0
        for path, line_number, row in read_tsv_rows(file_path):
            rows += 1
            where = f"{path}, line {line_number}"
            for column in columns:
                if column not in row:
                    raise ConfigurationError(f"{where}: no column {column!r} in {list(row)}")
            texts = tuple(
                self._check_text(row[c], where, f"sentence in column {c!r}") for c in columns
            )
            label = row.get(self.label_column)
            yield where, texts, (label.strip() if label is not None else None)
        if not rows:
            raise ConfigurationError(
                f"{file_path} has no data rows: only a header, or no row matches the "
                "'#column=value' filter."
            )

    def example_to_instance(self, texts: Sequence[str], label: Optional[str] = None) -> Instance:
        if self.is_pair:
            return self.text_to_instance(premise=texts[0], hypothesis=texts[1], label=label)
        return self.text_to_instance(sentence=texts[0], label=label)

    def _read(self, file_path: str) -> Iterable[Instance]:
        for _, texts, label in self.read_examples(file_path):
            yield self.example_to_instance(texts, label)


@DatasetReader.register("distillation_transfer_set")
class TransferSetReader(DistillationReader):
    """
    The JSON-lines transfer set of `allennlp ldnet-distill-transfer-set`. Line 1 is a header
    `{"transfer_set": {"teacher_labels": [...], ...}}`; every other line is one example:
    `{"sentence": ...}` or `{"premise": ..., "hypothesis": ...}`, `"teacher_logits": [...]`
    (one per teacher label), and `"label"` (the gold label) for original examples only. An
    example without a gold label gets the teacher's argmax as its hard label.

    # Parameters

    use_gold_labels : `bool`, optional (default = `True`)
        When false, every example's hard label is the teacher's argmax.
    tokenizer, token_indexers
        See `DistillationReader`.
    """

    def __init__(
        self,
        use_gold_labels: bool = True,
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        **kwargs,
    ) -> None:
        super().__init__(tokenizer, token_indexers, False, False, **kwargs)
        self.use_gold_labels = use_gold_labels

    def _read(self, file_path: str) -> Iterable[Instance]:
        teacher_labels: Optional[List[str]] = None
        examples = 0
        for line_number, line in utf8_lines(file_path):
            where = f"{file_path}, line {line_number}"
            if line_number == 1:
                teacher_labels = list(parse_transfer_set_header(file_path, line)["teacher_labels"])
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ConfigurationError(f"{where}: not valid JSON ({error})") from error
            if not isinstance(row, dict):
                raise ConfigurationError(f"{where}: a row must be a JSON object, got {line[:80]!r}")
            logits = row.get("teacher_logits")
            if logits is None:
                raise ConfigurationError(f"{where}: the row has no 'teacher_logits'")
            if not isinstance(logits, list) or len(logits) != len(teacher_labels):
                count = len(logits) if isinstance(logits, list) else "not a list of"
                raise ConfigurationError(
                    f"{where}: {count} teacher_logits, but the header lists "
                    f"{len(teacher_labels)} teacher labels {teacher_labels}"
                )
            if not all(_is_finite_number(x) for x in logits):
                raise ConfigurationError(
                    f"{where}: teacher_logits must be finite numbers, got {logits}"
                )
            if row.get("label") is not None and str(row["label"]) not in teacher_labels:
                raise ConfigurationError(
                    f"{where}: gold label {row['label']!r} is not one of the header's teacher "
                    f"labels {teacher_labels}"
                )
            examples += 1
            label = row.get("label") if self.use_gold_labels else None
            if label is None:
                label = teacher_labels[int(numpy.argmax(logits))]
            if "sentence" in row:
                yield self.text_to_instance(
                    sentence=self._check_text(row["sentence"], where, "sentence"),
                    label=label,
                    teacher_logits=logits,
                    teacher_labels=teacher_labels,
                    transfer_set=file_path,
                )
            else:
                yield self.text_to_instance(
                    premise=self._check_text(row.get("premise"), where, "premise"),
                    hypothesis=self._check_text(row.get("hypothesis"), where, "hypothesis"),
                    label=label,
                    teacher_logits=logits,
                    teacher_labels=teacher_labels,
                    transfer_set=file_path,
                )
        if teacher_labels is None:
            raise ConfigurationError(f"{file_path} is empty; expected a transfer-set header line")
        if not examples:
            raise ConfigurationError(f"{file_path} has a header but no examples")


def _is_finite_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and bool(numpy.isfinite(value))
    )


def parse_transfer_set_header(path: str, line: str) -> Dict[str, Any]:
    try:
        header = json.loads(line)[HEADER_KEY]
        labels = header["teacher_labels"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ConfigurationError(
            f"{path}, line 1: expected the header "
            '{"transfer_set": {"teacher_labels": [...], ...}} written by '
            "`allennlp ldnet-distill-transfer-set`"
        ) from error
    if not isinstance(labels, list) or not labels:
        raise ConfigurationError(f"{path}, line 1: 'teacher_labels' must be a non-empty list")
    return header
