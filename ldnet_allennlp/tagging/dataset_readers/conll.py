"""
Thin, validating subclasses of the CoNLL readers of AllenNLP / allennlp-models.

The originals split each line on whitespace and `zip` the columns, so a line with too many
columns is silently truncated and one with too few fails with an unpacking error that names
neither the file nor the line.  These subclasses read the same files into the same instances
(the parent's `text_to_instance`), but check every line first and raise a `ConfigurationError`
naming the file and the line number.
"""

import logging
import os
from typing import Iterable, Iterator, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from allennlp_models.tagging.dataset_readers.conll2000 import Conll2000DatasetReader

logger = logging.getLogger(__name__)

HOLDOUT_CHOICES = (None, "exclude", "only")


def read_conll_sentences(
    file_path: str, num_columns: int, column_names: str, skip_docstart: bool
) -> Iterator[Tuple[int, List[List[str]]]]:
    """
    Yields `(line number of the sentence's first token, rows)` for every sentence of a
    CoNLL file (sentences separated by blank lines; `-DOCSTART-` lines are dividers when
    `skip_docstart`).  Every row must have exactly `num_columns` whitespace-separated
    columns, otherwise a `ConfigurationError` names `file_path` and the (1-based) line.
    """
    rows: List[List[str]] = []
    first_line = 0
    with open(cached_path(file_path), "r", encoding="utf-8") as data_file:
        for line_number, line in enumerate(data_file, start=1):
            columns = line.split()
            if not columns or (skip_docstart and columns[0] == "-DOCSTART-"):
                if rows:
                    yield first_line, rows
                rows = []
                continue
            if len(columns) != num_columns:
                raise ConfigurationError(
                    f"{file_path}, line {line_number}: expected {num_columns} "
                    f"whitespace-separated columns ({column_names}), got {len(columns)}: "
                    f"{line.rstrip()!r}"
                )
            if not rows:
                first_line = line_number
            rows.append(columns)
    if rows:
        yield first_line, rows


def _check_holdout(holdout: Optional[str], holdout_every: int) -> None:
    if holdout not in HOLDOUT_CHOICES:
        raise ConfigurationError(f"holdout must be null, 'exclude' or 'only', got {holdout!r}.")
    if holdout_every < 2:
        raise ConfigurationError(f"holdout_every must be >= 2, got {holdout_every}.")


def _keep(index: int, holdout: Optional[str], holdout_every: int) -> bool:
    """Sentence `index` (0-based) is held out when `index % holdout_every == holdout_every - 1`."""
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
        for _, rows in self.shard_iterable(sentences):
            words, pos_tags, chunk_tags, ner_tags = (list(column) for column in zip(*rows))
            yield self.text_to_instance([Token(w) for w in words], pos_tags, chunk_tags, ner_tags)


@DatasetReader.register("ldnet_conll2000")
class ValidatingConll2000DatasetReader(Conll2000DatasetReader):
    """
    allennlp-models' `conll2000` reader (3 columns: `word POS chunk`, IOB2), with every line
    checked (a line without exactly 3 columns is a `ConfigurationError` naming file and line),
    and a deterministic hold-out split, since CoNLL-2000 has no dev set: sentence i (0-based,
    in file order) is *held out* when `i % holdout_every == holdout_every - 1`.

    Config keys: those of `conll2000`, plus

    holdout : `str`, optional (default `null`) — `null` reads every sentence, `"exclude"`
        reads all but the held-out ones (training), `"only"` reads just the held-out ones
        (validation).  Use `"exclude"` in `dataset_reader` and `"only"` in
        `validation_dataset_reader`, both on `train.txt`.
    holdout_every : `int`, optional (default `10`) — every `holdout_every`-th sentence is held
        out (10: 893 of CoNLL-2000's 8,936 training sentences).
    holdout_path : `str`, optional — if given, the split applies only when reading this file
        (compared after resolving the path) and any other file is read whole; so
        `allennlp evaluate model.tar.gz test.txt` scores all of `test.txt` although the
        archive's validation reader holds out a tenth of `train.txt`.

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
        sentences = read_conll_sentences(str(file_path), 3, "word POS chunk", skip_docstart=False)
        kept = (
            rows
            for index, (_, rows) in enumerate(sentences)
            if _keep(index, holdout, self.holdout_every)
        )
        for rows in kept:
            words, pos_tags, chunk_tags = (list(column) for column in zip(*rows))
            yield self.text_to_instance([Token(w) for w in words], pos_tags, chunk_tags)
