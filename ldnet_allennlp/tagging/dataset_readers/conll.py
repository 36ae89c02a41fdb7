"""
Thin, validating subclasses of the CoNLL readers of AllenNLP / allennlp-models.

The originals split each line on whitespace and `zip` the columns, so a line with too many
columns is silently truncated and one with too few fails with an unpacking error that names
neither the file nor the line.  These subclasses read the same files into the same instances
(the parent's `text_to_instance`), but check every line first and raise a `ConfigurationError`
naming the file and the line number.

What counts as bad (each a `ConfigurationError` naming the file and, where there is one, the
line): bytes that are not UTF-8; a line without exactly the expected number of columns; a file
without any sentence (empty, or only blank and `-DOCSTART-` lines); and, when the reader converts
tags (`convert_to_coding_scheme: "BIOUL"`), a tag that is not `O`, `B-<type>` or `I-<type>`, or a
sequence the original scheme does not allow (`I-X` after `O` in IOB2). Columns are separated by
spaces and tabs only: any other character, including other Unicode whitespace and control
characters, is part of a token (AllenNLP's readers split on every Unicode space, so a token
holding e.g. U+001C silently shifted the columns). A UTF-8 byte-order mark is ignored, and
`-DOCSTART-` lines are document dividers in both formats.
"""

import logging
import os
import re
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from allennlp.data.dataset_readers.dataset_utils.span_utils import InvalidTagSequence, to_bioul
from allennlp_models.tagging.dataset_readers.conll2000 import Conll2000DatasetReader

from ldnet_allennlp.common.file_utils import utf8_lines

logger = logging.getLogger(__name__)

HOLDOUT_CHOICES = (None, "exclude", "only")
COLUMN_SEPARATOR = re.compile(r"[ \t]+")
TAG = re.compile(r"O|[BI]-.+")


def read_conll_sentences(
    file_path: str, num_columns: int, column_names: str, skip_docstart: bool
) -> Iterator[Tuple[int, List[List[str]]]]:
    """
    Yields `(line number of the sentence's first token, rows)` for every sentence of a
    CoNLL file (sentences separated by blank lines; `-DOCSTART-` lines are dividers when
    `skip_docstart`).  Every row must have exactly `num_columns` columns separated by spaces or
    tabs, otherwise a `ConfigurationError` names `file_path` and the (1-based) line; so do bytes
    that are not UTF-8, and a file without any sentence.
    """
    rows: List[List[str]] = []
    first_line = 0
    sentences = 0
    for line_number, line in utf8_lines(cached_path(file_path), file_path):
        columns = [c for c in COLUMN_SEPARATOR.split(line) if c]
        if not columns or (skip_docstart and columns[0] == "-DOCSTART-"):
            if rows:
                sentences += 1
                yield first_line, rows
            rows = []
            continue
        if len(columns) != num_columns:
            shown = line if len(line) <= 200 else line[:200] + "..."
            raise ConfigurationError(
                f"{file_path}, line {line_number}: expected {num_columns} columns "
                f"({column_names}) separated by spaces or tabs, got {len(columns)}: {shown!r}"
            )
        if not rows:
            first_line = line_number
        rows.append(columns)
    if rows:
        sentences += 1
        yield first_line, rows
    if not sentences:
        raise ConfigurationError(
            f"{file_path} has no sentences: it is empty or holds only blank and -DOCSTART- lines."
        )


def check_tags(
    file_path: str, first_line: int, column: str, tags: Sequence[str], encoding: str
) -> None:
    """
    Before `to_bioul(tags, encoding)`: every tag is `O`, `B-<type>` or `I-<type>` and the
    sequence is valid in `encoding`; otherwise a `ConfigurationError` names the file and the line
    of the first bad tag (the sentence's rows are the lines from `first_line` on).
    """
    for offset, tag in enumerate(tags):
        if not TAG.fullmatch(tag):
            raise ConfigurationError(
                f"{file_path}, line {first_line + offset}: {column} tag {tag!r} is not O, "
                f"B-<type> or I-<type> ({encoding})."
            )
    try:
        to_bioul(list(tags), encoding=encoding)
    except InvalidTagSequence:
        end = next(e for e in range(1, len(tags) + 1) if not _valid(tags[:e], encoding))
        previous = repr(tags[end - 2]) if end > 1 else "the start of the sentence"
        raise ConfigurationError(
            f"{file_path}, line {first_line + end - 1}: {column} tag {tags[end - 1]!r} cannot "
            f"follow {previous} in {encoding}."
        )


def _valid(tags: Sequence[str], encoding: str) -> bool:
    try:
        to_bioul(list(tags), encoding=encoding)
    except InvalidTagSequence:
        return False
    return True


def _check_holdout(holdout: Optional[str], holdout_every: int) -> None:
    if holdout not in HOLDOUT_CHOICES:
        raise ConfigurationError(f"holdout must be null, 'exclude' or 'only', got {holdout!r}.")
    if holdout_every < 2:
        raise ConfigurationError(f"holdout_every must be >= 2, got {holdout_every}.")


def keep_sentence(index: int, holdout: Optional[str], holdout_every: int) -> bool:
    """Whether sentence `index` (0-based, in file order) is read under `holdout` (`None`,
    `"exclude"` or `"only"`): it is held out when `index % holdout_every == holdout_every - 1`."""
    held_out = index % holdout_every == holdout_every - 1
    if holdout == "exclude":
        return not held_out
    if holdout == "only":
        return held_out
    return True


@DatasetReader.register("ldnet_conll2003")
class ValidatingConll2003DatasetReader(Conll2003DatasetReader):
    """
    AllenNLP's `conll2003` reader (4 columns: `word POS chunk NER`, IOB1), with every line
    checked: a line that does not have exactly 4 columns is a `ConfigurationError` naming the
    file and the line.  Same config keys and instances as `conll2003`.

    Registered as `"ldnet_conll2003"`.
    """

    def _read(self, file_path) -> Iterable[Instance]:
        logger.info("Reading CoNLL-2003 sentences from %s", file_path)
        sentences = read_conll_sentences(
            str(file_path), 4, "word POS chunk NER", skip_docstart=True
        )
        for first_line, rows in self.shard_iterable(sentences):
            words, pos_tags, chunk_tags, ner_tags = (list(column) for column in zip(*rows))
            if self.convert_to_coding_scheme == "BIOUL":
                for column, tags in (("chunk", chunk_tags), ("NER", ner_tags)):
                    check_tags(str(file_path), first_line, column, tags, "IOB1")
            yield self.text_to_instance([Token(w) for w in words], pos_tags, chunk_tags, ner_tags)


@DatasetReader.register("ldnet_conll2000")
class ValidatingConll2000DatasetReader(Conll2000DatasetReader):
    """
    allennlp-models' `conll2000` reader (3 columns: `word POS chunk`, IOB2), with every line
    checked (a line without exactly 3 columns is a `ConfigurationError` naming file and line),
    and a deterministic hold-out split, since CoNLL-2000 has no dev set: sentence i (0-based,
    in file order) is *held out* when `i % holdout_every == holdout_every - 1`.

    # Parameters

    Those of `conll2000`, plus:

    holdout : `str`, optional (default = `null`)
        `null` reads every sentence, `"exclude"` reads all but the held-out ones (training),
        `"only"` reads just the held-out ones (validation).  Use `"exclude"` in `dataset_reader` and
        `"only"` in `validation_dataset_reader`, both on `train.txt`.
    holdout_every : `int`, optional (default = `10`)
        Every `holdout_every`-th sentence is held out (10: 893 of CoNLL-2000's 8,936 training
        sentences).
    holdout_path : `str`, optional
        If given, the split applies only when reading this file (compared after resolving the path)
        and any other file is read whole; so `allennlp evaluate model.tar.gz test.txt` scores all of
        `test.txt` although the archive's validation reader holds out a tenth of `train.txt`.

    Registered as `"ldnet_conll2000"`.
    """

    def __init__(
        self,
        holdout: Optional[str] = None,
        holdout_every: int = 10,
        holdout_path: Optional[str] = None,
        **kwargs,
    ) -> None:
        _check_holdout(holdout, holdout_every)
        super().__init__(**kwargs)
        self.holdout = holdout
        self.holdout_every = holdout_every
        self.holdout_path = holdout_path

    def _read(self, file_path) -> Iterable[Instance]:
        holdout = self.holdout
        if self.holdout_path is not None and os.path.realpath(str(file_path)) != os.path.realpath(
            self.holdout_path
        ):
            holdout = None
        logger.info("Reading CoNLL-2000 sentences from %s (holdout=%s)", file_path, holdout)
        sentences = read_conll_sentences(str(file_path), 3, "word POS chunk", skip_docstart=True)
        kept = (
            (first_line, rows)
            for index, (first_line, rows) in enumerate(sentences)
            if keep_sentence(index, holdout, self.holdout_every)
        )
        for first_line, rows in kept:
            words, pos_tags, chunk_tags = (list(column) for column in zip(*rows))
            if self.convert_to_coding_scheme == "BIOUL":
                check_tags(str(file_path), first_line, "chunk", chunk_tags, "BIO")
            yield self.text_to_instance([Token(w) for w in words], pos_tags, chunk_tags)
