"""
Token ids in a dense LM archive's own `tokens` vocabulary (not the task's), for the scalar-mix
embedder.
"""

import functools
import os
from typing import Dict, List

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary
from allennlp.models.archival import extracted_archive


@functools.lru_cache(maxsize=8)
def lm_vocabulary(archive: str) -> Vocabulary:
    """The `Vocabulary` stored in a model archive (or serialization directory)."""
    path = cached_path(archive)
    if os.path.isdir(path):
        return Vocabulary.from_files(os.path.join(path, "vocabulary"))
    with extracted_archive(path) as directory:
        return Vocabulary.from_files(os.path.join(directory, "vocabulary"))


@TokenIndexer.register("scalar_mix_lm_tokens")
class ScalarMixLMTokenIndexer(TokenIndexer):
    """
    Maps each token to its id in the `tokens` namespace of the LM archive's vocabulary (unknown
    words -> `@@UNKNOWN@@`, padding 0), ignoring the task vocabulary: what
    `dense_lm_scalar_mix` reads. Registered as `"scalar_mix_lm_tokens"`.

    # Parameters

    archive : `str`
        A dense LM `model.tar.gz` (either direction: both share the vocabulary).
    lowercase_tokens : `bool`, optional (default = `False`)
        Lowercase before the lookup (only if the LM was trained on lowercased text).
    """

    def __init__(
        self, archive: str, lowercase_tokens: bool = False, token_min_padding_length: int = 0
    ) -> None:
        super().__init__(token_min_padding_length)
        try:
            self._lm_vocab = lm_vocabulary(str(archive))
        except (FileNotFoundError, OSError) as error:
            raise ConfigurationError(
                f"archive: cannot read the LM vocabulary of {archive!r} ({error})."
            )
        self._lowercase_tokens = lowercase_tokens

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]) -> None:
        """The LM vocabulary is fixed: nothing is added to the task vocabulary."""

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        texts = [t.text.lower() if self._lowercase_tokens else t.text for t in tokens]
        return {"tokens": [self._lm_vocab.get_token_index(text, "tokens") for text in texts]}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"tokens": []}
