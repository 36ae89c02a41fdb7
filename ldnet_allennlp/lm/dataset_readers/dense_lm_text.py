"""Reader for LM text: one tokenized sentence per line."""

import logging
from typing import Dict, Iterable, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.instance import Instance
from allennlp.data.token_indexers.token_indexer import TokenIndexer
from allennlp.data.tokenizers import WhitespaceTokenizer
from allennlp_models.lm.dataset_readers.simple_language_modeling import (
    SimpleLanguageModelingDatasetReader,
)

from ldnet_allennlp.common.file_utils import utf8_lines

logger = logging.getLogger(__name__)


@DatasetReader.register("dense_lm_text")
class DenseLMTextDatasetReader(SimpleLanguageModelingDatasetReader):
    """
    allennlp-models' `simple_language_modeling` reader with the defaults the dense LMs use:
    lines are already tokenized (`scripts/prepare_lm_corpus.py`), so tokens are split on
    whitespace, and every sentence is wrapped in `<S>` ... `</S>` (the forward LM predicts
    `</S>` after the last word, the backward LM predicts `<S>` before the first).  Blank lines
    are skipped; a file without any sentence is a `ConfigurationError` naming the file, and so
    are bytes that are not UTF-8 (naming the line too). A UTF-8 byte-order mark is ignored.

    Each instance has one field, `source`: a `TextField` of `<S> w_1 ... w_n </S>`.

    Registered as `"dense_lm_text"`.

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": single_id}`)
    max_sequence_length : `int`, optional
        Sentences longer than this (counting `<S>`/`</S>`) are dropped (the number dropped is
        logged).
    start_tokens : `List[str]`, optional (default = `["<S>"]`)
    end_tokens : `List[str]`, optional (default = `["</S>"]`)
    """

    def __init__(
        self,
        token_indexers: Dict[str, TokenIndexer] = None,
        max_sequence_length: Optional[int] = None,
        start_tokens: Optional[List[str]] = None,
        end_tokens: Optional[List[str]] = None,
        **kwargs,
    ) -> None:
        if max_sequence_length is not None and max_sequence_length < 1:
            raise ConfigurationError(
                f"max_sequence_length must be >= 1, got {max_sequence_length}."
            )
        super().__init__(
            tokenizer=WhitespaceTokenizer(),
            token_indexers=token_indexers,
            max_sequence_length=max_sequence_length,
            start_tokens=["<S>"] if start_tokens is None else start_tokens,
            end_tokens=["</S>"] if end_tokens is None else end_tokens,
            manual_distributed_sharding=True,
            manual_multiprocess_sharding=True,
            **kwargs,
        )

    def _read(self, file_path: str) -> Iterable[Instance]:
        path = cached_path(file_path)
        if not any(line.strip() for _, line in utf8_lines(path, file_path)):
            raise ConfigurationError(
                f"The LM text file {file_path} is empty: it needs one tokenized sentence "
                "per line."
            )
        dropped = 0
        for line in self.shard_iterable(line for _, line in utf8_lines(path, file_path)):
            if not line.strip():
                continue
            instance = self.text_to_instance(line)
            if instance.fields["source"].sequence_length() > self._max_sequence_length:
                dropped += 1
                continue
            yield instance
        if dropped:
            logger.warning(
                "Dropped %d sentences longer than %s from %s.",
                dropped,
                self._max_sequence_length,
                file_path,
            )
