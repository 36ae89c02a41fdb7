"""
Tang et al. (2019)'s data-augmentation rules, as plain functions with no AllenNLP in them.

For every word of an example draw `u ~ U(0, 1)`:

* `u < p_mask` → the word becomes `mask_token` (*masking*);
* else `u < p_mask + p_pos` → the word becomes a word with the **same POS tag**, drawn from that
  tag's unigram distribution over the training set (*POS-guided replacement*);
* else the word is kept.

The two word rules exclude each other by construction (one draw decides). Then, with probability
`p_ng`, a length `n ~ U{1..5}` is drawn and only a random n-gram of the example is kept (*n-gram
sampling*). Each example yields `n_iter` such samples. For sentence pairs the augmented side
rotates: sample `k` augments the first sentence (`k % 3 == 0`), the second (`k % 3 == 1`) or both
(`k % 3 == 2`).

Randomness comes only from the `numpy.random.Generator` the caller passes, so a fixed seed gives
a fixed result. `augment_words` returns an `AugmentationTrace` alongside the words so tests can
check every decision.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy

KEEP, MASK, POS_REPLACE = "keep", "mask", "pos"
MAX_NGRAM = 5


@dataclass
class AugmentationTrace:
    """What happened to one sentence: a rule per input word, and the n-gram kept (if any)."""

    word_rules: List[str] = field(default_factory=list)
    ngram: Optional[Tuple[int, int]] = None  # (start, length) in the word-rule output


class PosUnigrams:
    """
    The unigram distribution of words per POS tag, counted over a tagged training set.

    `sample(tag, rng)` draws a word with probability `count(word, tag) / count(tag)`. Words are
    stored in first-seen order so the draw does not depend on hash ordering.
    """

    def __init__(self, tagged_sentences: Iterable[Tuple[Sequence[str], Sequence[str]]]) -> None:
        counts: Dict[str, Counter] = defaultdict(Counter)
        for words, tags in tagged_sentences:
            for word, tag in zip(words, tags):
                counts[tag][word] += 1
        self.words: Dict[str, List[str]] = {}
        self.probabilities: Dict[str, numpy.ndarray] = {}
        for tag, counter in counts.items():
            words = list(counter.keys())
            frequencies = numpy.array([counter[w] for w in words], dtype=numpy.float64)
            self.words[tag] = words
            self.probabilities[tag] = frequencies / frequencies.sum()

    def has(self, tag: str) -> bool:
        return tag in self.words

    def sample(self, tag: str, rng: numpy.random.Generator) -> str:
        words = self.words[tag]
        return words[int(rng.choice(len(words), p=self.probabilities[tag]))]


@dataclass
class AugmentationRules:
    """
    The hyper-parameters of Tang et al.'s augmentation (their defaults: p_mask = p_pos = 0.1,
    p_ng = 0.25, n_iter = 20).
    """

    p_mask: float = 0.1
    p_pos: float = 0.1
    p_ng: float = 0.25
    n_iter: int = 20
    mask_token: str = "[MASK]"

    def __post_init__(self) -> None:
        for name in ("p_mask", "p_pos", "p_ng"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.p_mask + self.p_pos > 1.0:
            raise ValueError(f"p_mask + p_pos must be <= 1, got {self.p_mask + self.p_pos}")
        if self.n_iter < 0:
            raise ValueError(f"n_iter must be >= 0, got {self.n_iter}")


def augment_words(
    words: Sequence[str],
    tags: Sequence[str],
    rules: AugmentationRules,
    unigrams: PosUnigrams,
    rng: numpy.random.Generator,
) -> Tuple[List[str], AugmentationTrace]:
    """
    One augmented sample of a tagged sentence (`len(words) == len(tags)`). A word whose tag has
    no unigram entry is kept when it falls into the POS rule (that cannot happen when the
    unigrams were counted over the same corpus).
    """
    if len(words) != len(tags):
        raise ValueError(f"{len(words)} words but {len(tags)} tags")
    trace = AugmentationTrace()
    output: List[str] = []
    draws = rng.random(len(words))
    for word, tag, u in zip(words, tags, draws):
        if u < rules.p_mask:
            output.append(rules.mask_token)
            trace.word_rules.append(MASK)
        elif u < rules.p_mask + rules.p_pos and unigrams.has(tag):
            output.append(unigrams.sample(tag, rng))
            trace.word_rules.append(POS_REPLACE)
        else:
            output.append(word)
            trace.word_rules.append(KEEP)
    if output and rng.random() < rules.p_ng:
        n = int(rng.integers(1, MAX_NGRAM + 1))
        n = min(n, len(output))
        start = int(rng.integers(0, len(output) - n + 1))
        output = output[start : start + n]
        trace.ngram = (start, n)
    return output, trace


def pair_side(sample_index: int) -> str:
    """Which side of a pair sample `sample_index` augments: "first", "second" or "both"."""
    return ("first", "second", "both")[sample_index % 3]


def augment_example(
    tagged: Sequence[Tuple[Sequence[str], Sequence[str]]],
    rules: AugmentationRules,
    unigrams: PosUnigrams,
    rng: numpy.random.Generator,
) -> List[Tuple[str, ...]]:
    """
    `rules.n_iter` augmented samples of one example, each a tuple of whitespace-joined sentences.
    `tagged` holds one `(words, tags)` per sentence (one for single-sentence tasks, two for
    pairs). Pairs rotate among augmenting the first, the second and both sentences.
    """
    samples: List[Tuple[str, ...]] = []
    for k in range(rules.n_iter):
        if len(tagged) == 1:
            sides = [True]
        else:
            side = pair_side(k)
            sides = [side in ("first", "both"), side in ("second", "both")]
        texts = []
        for (words, tags), augment in zip(tagged, sides):
            if augment:
                words, _ = augment_words(words, tags, rules, unigrams, rng)
            texts.append(" ".join(words))
        samples.append(tuple(texts))
    return samples
