"""
The training data of a distilled (student) tagger: the gold sentences of a labelled file, read by
any tagging reader, followed by the sentences of a tagging transfer set
(`allennlp ldnet-tagging-transfer-set`) with the teacher's marginals and silver tags.
"""

import json
import logging
from typing import Any, Dict, Iterable, List, Optional

import numpy
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.fields import MetadataField, SequenceLabelField, TensorField, TextField

from ldnet_allennlp.common.file_utils import utf8_lines
from ldnet_allennlp.distillation.tagging.transfer_set import parse_header

logger = logging.getLogger(__name__)


@DatasetReader.register("ldnet_tagging_distillation")
class TaggingDistillationReader(DatasetReader):
    """
    Reads `file_path` with `gold_reader`, then the rows of `transfer_set`. Every instance has the
    fields `tokens`, `tags`, `metadata` (with `words` and the teacher's tag order
    `teacher_labels`), `teacher_marginals` `(num_tokens, num_teacher_tags)` and `transfer`
    (a 0-d tensor: 0 for a gold sentence, 1 for a transfer-set one). A gold sentence's
    `teacher_marginals` are zeros and unused; a transfer sentence's `tags` are its silver tags
    and its marginals the teacher's, renormalised over the tags the file lists.

    Use it as the `dataset_reader` of a student config and the gold reader alone as its
    `validation_dataset_reader` (`ldnet_crf_tagger` then trains with its distillation loss).

    Registered as `"ldnet_tagging_distillation"`.

    # Parameters

    gold_reader : `DatasetReader`
        The reader of the labelled file (e.g. `ldnet_conll2003`); its token indexers index the
        transfer sentences too.
    transfer_set : `str`
        A JSON-lines file written by `allennlp ldnet-tagging-transfer-set`.
    transfer_sentences : `int`, optional (default = all)
        Use only the rows of the first `transfer_sentences` sentences of the transfer set's input
        (by input line), so that one file gives nested transfer sets of growing size.
    """

    def __init__(
        self,
        gold_reader: DatasetReader,
        transfer_set: str,
        transfer_sentences: Optional[int] = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if transfer_sentences is not None and transfer_sentences < 0:
            raise ConfigurationError(
                f"transfer_sentences must be >= 0 (or null), got {transfer_sentences}"
            )
        self.gold_reader = gold_reader
        self.transfer_set = transfer_set
        self.transfer_sentences = transfer_sentences

    def _read(self, file_path) -> Iterable[Instance]:
        rows, labels = self.transfer_rows()
        for instance in self.gold_reader.read(file_path):
            length = len(instance["tokens"])
            instance.add_field("teacher_marginals", TensorField(torch.zeros(length, len(labels))))
            instance.add_field("transfer", TensorField(torch.tensor(0.0)))
            instance["metadata"].metadata["teacher_labels"] = labels
            yield instance
        for row in rows:
            yield self.transfer_instance(row, labels)

    def text_to_instance(self, *args, **kwargs) -> Instance:  # type: ignore
        """The gold reader's instance (what a predictor or `tensor_batches` builds)."""
        return self.gold_reader.text_to_instance(*args, **kwargs)

    def transfer_rows(self):
        """`(rows, teacher_labels)`: the transfer-set rows used (checked), in file order."""
        rows: List[Dict[str, Any]] = []
        labels: List[str] = []
        for line_number, text in utf8_lines(self.transfer_set):
            if line_number == 1:
                labels = parse_header(self.transfer_set, text)["teacher_labels"]
                continue
            try:
                row = json.loads(text)
                row["where"] = f"{self.transfer_set}, line {line_number}"
                _check_row(row, len(labels))
            except (ValueError, KeyError, TypeError) as error:
                raise ConfigurationError(
                    f"{self.transfer_set}, line {line_number}: not a transfer-set row ({error})"
                ) from error
            rows.append(row)
        if self.transfer_sentences is not None:
            lines = sorted(row["line"] for row in rows)
            cutoff = lines[self.transfer_sentences - 1] if self.transfer_sentences else 0
            rows = [row for row in rows if row["line"] <= cutoff]
        logger.info("%d transfer-set sentences from %s", len(rows), self.transfer_set)
        return rows, labels

    def transfer_instance(self, row: Dict[str, Any], labels: List[str]) -> Instance:
        tokens = TextField([Token(word) for word in row["tokens"]])
        marginals = numpy.zeros((len(row["tokens"]), len(labels)), dtype=numpy.float32)
        for position, pairs in enumerate(row["marginals"]):
            for tag, probability in pairs:
                marginals[position, tag] = probability
        marginals /= marginals.sum(axis=1, keepdims=True)
        instance = Instance(
            {
                "tokens": tokens,
                "tags": SequenceLabelField(row["silver"], tokens),
                "metadata": MetadataField({"words": row["tokens"], "teacher_labels": labels}),
                "teacher_marginals": TensorField(torch.from_numpy(marginals)),
                "transfer": TensorField(torch.tensor(1.0)),
            }
        )
        self.apply_token_indexers(instance)
        return instance

    def apply_token_indexers(self, instance: Instance) -> None:
        self.gold_reader.apply_token_indexers(instance)
        instance["tokens"]._token_indexers = self.gold_reader._token_indexers  # type: ignore


def _check_row(row: Dict[str, Any], num_labels: int) -> None:
    tokens, silver, marginals = row["tokens"], row["silver"], row["marginals"]
    if not tokens or len(silver) != len(tokens) or len(marginals) != len(tokens):
        raise ValueError("tokens, silver and marginals must have one entry per token")
    for pairs in marginals:
        if not pairs or any(not 0 <= int(tag) < num_labels for tag, _ in pairs):
            raise ValueError(f"a token's marginals must list tags in [0, {num_labels})")
    int(row["line"])
