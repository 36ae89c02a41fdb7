"""
The tagger's token indexers, replayed over the exported vocabularies: each turns a batch of
tokenised sentences into one input array of the graph, as AllenNLP's indexer and batch padding
would.

- `single_id` and `dense_lm_tokens` (AllenNLP's `SingleIdTokenIndexer` and ours, which is one
  over the LMs' cased vocabulary): the token, lowercased if `lowercase_tokens`, looked up in
  its namespace, `oov_id` (`@@UNKNOWN@@`) when absent; `(batch, num_tokens)` int64, 0 at
  padding. (The LMs' sentence boundaries are added inside the graph, as `DenseBiLm` adds them.)
- `characters` (`TokenCharactersIndexer` with the default `CharacterTokenizer`): each character
  looked up, `oov_id` when absent; `(batch, num_tokens, num_chars)` int64 where `num_chars` is
  the longest word of the batch, at least `min_padding_length`; 0 at padding.
- `glove_tokens` + `glove_embedding`: the vectors themselves (`glove.GloveLookup`: the word
  index exported with the tagger, the vectors of the installed GloVe package).
"""

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ldnet_runtime.glove import GloveLookup

Sentences = Sequence[Sequence[str]]


class SingleIdIndexer:
    def __init__(self, spec: Dict[str, Any], words: List[str]) -> None:
        self.namespace = spec["namespace"]
        self.lowercase_tokens = bool(spec["lowercase_tokens"])
        self.oov_id: Optional[int] = spec["oov_id"]
        self.token_to_id = {word: index for index, word in enumerate(words)}

    def ids(self, tokens: Sequence[str]) -> List[int]:
        lookup, oov_id = self.token_to_id, self.oov_id
        ids = []
        for token in tokens:
            text = token.lower() if self.lowercase_tokens else token
            index = lookup.get(text, oov_id)
            if index is None:
                raise KeyError(f"{text!r} is not in namespace {self.namespace!r}, which has no OOV")
            ids.append(index)
        return ids

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        output = np.zeros((len(sentences), num_tokens), dtype=np.int64)
        for b, tokens in enumerate(sentences):
            output[b, : len(tokens)] = self.ids(tokens)
        return output


class CharacterIndexer:
    def __init__(self, spec: Dict[str, Any], characters: List[str]) -> None:
        self.min_padding_length = int(spec["min_padding_length"])
        self.characters = SingleIdIndexer(
            {"namespace": spec["namespace"], "lowercase_tokens": False, "oov_id": spec["oov_id"]},
            characters,
        )

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        num_chars = max(
            [self.min_padding_length] + [len(token) for tokens in sentences for token in tokens]
        )
        output = np.zeros((len(sentences), num_tokens, num_chars), dtype=np.int64)
        for b, tokens in enumerate(sentences):
            for t, token in enumerate(tokens):
                output[b, t, : len(token)] = self.characters.ids(list(token))
        return output


class GloveIndexer:
    def __init__(self, spec: Dict[str, Any], export_dir: Path) -> None:
        self.lookup = GloveLookup(spec, export_dir)

    def __call__(self, sentences: Sentences, num_tokens: int) -> np.ndarray:
        return self.lookup.vectors(sentences, num_tokens)


def build_indexer(spec: Dict[str, Any], vocabularies: Dict[str, List[str]], export_dir: Path):
    """The indexer of one `tagger.json` input entry's `indexer` spec."""
    kind = spec["type"]
    if kind in ("single_id", "dense_lm_tokens"):
        return SingleIdIndexer(spec, vocabularies[spec["namespace"]])
    if kind == "characters":
        return CharacterIndexer(spec, vocabularies[spec["namespace"]])
    if kind == "glove_tokens":
        return GloveIndexer(spec, export_dir)
    raise ValueError(f"unknown indexer type {kind!r}")
