"""`ldnet_runtime.exported_tagger.length_buckets`: every sentence in one bucket, buckets sorted by
length, equal lengths in input order, at most `size` sentences each."""

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
