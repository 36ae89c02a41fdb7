"""Tang et al.'s augmentation rules, checked statistically on a fixed seed."""

from collections import Counter

import numpy
import pytest

from ldnet_allennlp.distillation.classification.augmentation import (
    KEEP,
    MASK,
    POS_REPLACE,
    AugmentationRules,
    PosUnigrams,
    augment_example,
    augment_words,
    pair_side,
)

# Every word has exactly one tag, so "the replacement keeps the POS tag" is checkable by lookup.
TAG_OF = {
    "the": "DT",
    "a": "DT",
    "this": "DT",
    "film": "NN",
    "plot": "NN",
    "cast": "NN",
    "story": "NN",
    "is": "VBZ",
    "seems": "VBZ",
    "good": "JJ",
    "dull": "JJ",
    "funny": "JJ",
    ".": ".",
}
SENTENCES = [
    "the film is good .",
    "a plot seems dull .",
    "this cast is funny .",
    "the story seems good .",
    "a film is dull .",
]


def tagged(sentence):
    words = sentence.split()
    return words, [TAG_OF[w] for w in words]


@pytest.fixture
def unigrams():
    return PosUnigrams(tagged(s) for s in SENTENCES)


def test_unigram_distribution_follows_counts(unigrams):
    # DT: the x2, a x2, this x1 in SENTENCES
    probabilities = dict(zip(unigrams.words["DT"], unigrams.probabilities["DT"]))
    assert probabilities == pytest.approx({"the": 0.4, "a": 0.4, "this": 0.2})
    rng = numpy.random.default_rng(0)
    draws = Counter(unigrams.sample("DT", rng) for _ in range(5000))
    assert draws["this"] / 5000 == pytest.approx(0.2, abs=0.02)


def test_rates_tags_and_exclusive_rules(unigrams):
    rules = AugmentationRules(p_mask=0.2, p_pos=0.3, p_ng=0.0, mask_token="[MASK]")
    rng = numpy.random.default_rng(13)
    counts = Counter()
    for _ in range(2000):
        words, tags = tagged(SENTENCES[int(rng.integers(len(SENTENCES)))])
        output, trace = augment_words(words, tags, rules, unigrams, rng)
        assert len(output) == len(words) == len(trace.word_rules)
        for original, tag, new, rule in zip(words, tags, output, trace.word_rules):
            counts[rule] += 1
            if rule == MASK:
                assert new == "[MASK]"
            elif rule == POS_REPLACE:
                assert new != "[MASK]" and TAG_OF[new] == tag  # same POS tag
            else:
                assert rule == KEEP and new == original
    total = sum(counts.values())
    assert counts[MASK] / total == pytest.approx(0.2, abs=0.015)
    assert counts[POS_REPLACE] / total == pytest.approx(0.3, abs=0.015)


def test_the_two_word_rules_never_both_apply(unigrams):
    # p_mask + p_pos = 1: every word is changed by exactly one rule, and masking takes its
    # share first (u < p_mask), so no word is both masked and replaced.
    rules = AugmentationRules(p_mask=0.5, p_pos=0.5, p_ng=0.0)
    rng = numpy.random.default_rng(5)
    counts = Counter()
    for _ in range(500):
        _, trace = augment_words(*tagged(SENTENCES[0]), rules, unigrams, rng)
        assert KEEP not in trace.word_rules
        counts.update(trace.word_rules)
    assert counts[MASK] + counts[POS_REPLACE] == 500 * 5
    assert counts[MASK] / 2500 == pytest.approx(0.5, abs=0.03)


def test_ngram_lengths(unigrams):
    rules = AugmentationRules(p_mask=0.0, p_pos=0.0, p_ng=0.5)
    rng = numpy.random.default_rng(21)
    long_sentence = " ".join(["the film is good ."] * 2)  # 10 words, so every n fits
    words, tags = tagged(long_sentence)
    lengths = Counter()
    sampled = 0
    for _ in range(2000):
        output, trace = augment_words(words, tags, rules, unigrams, rng)
        if trace.ngram is None:
            assert output == words
            continue
        sampled += 1
        start, n = trace.ngram
        assert 1 <= n <= 5 and len(output) == n
        assert output == words[start : start + n]  # a contiguous n-gram of the example
        lengths[n] += 1
    assert sampled / 2000 == pytest.approx(0.5, abs=0.04)
    assert sorted(lengths) == [1, 2, 3, 4, 5]
    assert all(count / sampled == pytest.approx(0.2, abs=0.04) for count in lengths.values())


def test_ngram_of_a_short_sentence_never_exceeds_it(unigrams):
    rules = AugmentationRules(p_mask=0.0, p_pos=0.0, p_ng=1.0)
    rng = numpy.random.default_rng(3)
    for _ in range(200):
        output, _ = augment_words(["good", "."], ["JJ", "."], rules, unigrams, rng)
        assert 1 <= len(output) <= 2


def test_pairs_rotate_first_second_both(unigrams):
    assert [pair_side(k) for k in range(6)] == ["first", "second", "both"] * 2
    rules = AugmentationRules(p_mask=1.0, p_pos=0.0, p_ng=0.0, n_iter=3)
    samples = augment_example(
        [tagged("the film is good ."), tagged("a plot seems dull .")],
        rules,
        unigrams,
        numpy.random.default_rng(0),
    )
    masked = " ".join(["[MASK]"] * 5)
    assert samples == [
        (masked, "a plot seems dull ."),
        ("the film is good .", masked),
        (masked, masked),
    ]


def test_same_seed_same_samples(unigrams):
    rules = AugmentationRules(n_iter=20)
    example = [tagged("the story seems good .")]
    first = augment_example(example, rules, unigrams, numpy.random.default_rng([13, 4]))
    second = augment_example(example, rules, unigrams, numpy.random.default_rng([13, 4]))
    other = augment_example(example, rules, unigrams, numpy.random.default_rng([14, 4]))
    assert first == second and first != other


@pytest.mark.parametrize("kwargs", [{"p_mask": 1.5}, {"p_mask": 0.6, "p_pos": 0.6}, {"n_iter": -1}])
def test_invalid_rules(kwargs):
    with pytest.raises(ValueError):
        AugmentationRules(**kwargs)
