"""`ldnet_runtime.exported_tagger.length_buckets`: every sentence in one bucket, buckets sorted by
length, equal lengths in input order, at most `size` sentences each and, with `tokens`, at most
`tokens` padded tokens (a longer sentence alone), each bucket as full as those limits allow."""

import random

import pytest

from ldnet_runtime.exported_tagger import length_buckets


@pytest.mark.parametrize("size", [1, 2, 3, 8, 32, 100])
def test_buckets_cover_every_sentence_once_sorted_by_length(size):
    lengths = [random.Random(seed).randint(1, 40) for seed in range(75)]
    buckets = length_buckets(lengths, size)
    order = [i for bucket in buckets for i in bucket]
    assert sorted(order) == list(range(len(lengths)))
    assert order == sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    assert all(1 <= len(bucket) <= size for bucket in buckets)
    assert all(len(bucket) == size for bucket in buckets[:-1])


def test_no_sentences_no_buckets_and_a_bad_size_is_refused():
    assert length_buckets([], 8) == []
    with pytest.raises(ValueError, match="at least 1"):
        length_buckets([3], 0)


@pytest.mark.parametrize("size, tokens", [(32, 160), (8, 160), (32, 40), (3, 1000), (5, 1)])
def test_buckets_within_a_padded_token_budget(size, tokens):
    lengths = [random.Random(seed).randint(1, 60) for seed in range(75)]
    buckets = length_buckets(lengths, size, tokens)
    order = [i for bucket in buckets for i in bucket]
    assert order == sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    for bucket, following in zip(buckets, buckets[1:] + [None]):
        padded = len(bucket) * max(lengths[i] for i in bucket)
        assert 1 <= len(bucket) <= size
        assert padded <= tokens or len(bucket) == 1
        if following:  # the next sentence did not fit
            longer = lengths[following[0]]
            assert len(bucket) == size or (len(bucket) + 1) * longer > tokens


def test_short_sentences_share_a_run_and_long_ones_run_alone():
    lengths = [2, 50, 3, 2, 200, 4]
    assert length_buckets(lengths, 32, 160) == [[0, 3, 2, 5], [1], [4]]
    assert length_buckets(lengths, 2, 160) == [[0, 3], [2, 5], [1], [4]]
