"""
The frozen biLM's per-sentence feature cache (`DenseBiLm.cache_features`, the `lm_feature_cache`
trainer callback): the same features as without it, computed once per sentence, never used where
the features can change, and off again after training.
"""

import re

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.models.archival import load_archive

from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm, find_dense_bilms
from tests.lm.lm_archives import fixture_lm_archives
from tests.lm.modules.dense_bilm_test import EMBEDDERS, tagger_config


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


@pytest.fixture(scope="module")
def bilm():
    archives = fixture_lm_archives()
    return DenseBiLm(archives["forward"], archives["backward"])


def batch(rows):
    """Right-padded `(len(rows), max length)` ids."""
    ids = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    return ids


SENTENCES = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14], [7, 7, 7, 7, 7, 7, 7]]


def layers_of(bilm, rows):
    """`layers` of `rows`, padding positions zeroed, as one tensor per direction."""
    layers, mask = bilm.layers(batch(rows))
    return {d: torch.cat(pieces, -1) * mask.unsqueeze(-1) for d, pieces in layers.items()}


def test_cached_features_equal_the_computed_ones_in_any_batch(bilm):
    with torch.no_grad():
        bilm.cache_features(False)
        alone = [layers_of(bilm, [s]) for s in SENTENCES]
        bilm.cache_features(True)
        try:
            first = layers_of(bilm, SENTENCES[:3])
            assert (bilm.feature_cache.misses, bilm.feature_cache.hits) == (3, 0)
            # another batch: other padding, other order, one new sentence and a repeat
            rows = [SENTENCES[3], SENTENCES[1], SENTENCES[0], SENTENCES[1]]
            second = layers_of(bilm, rows)
            assert (bilm.feature_cache.misses, bilm.feature_cache.hits) == (4, 3)
            assert len(bilm.feature_cache) == 4
        finally:
            bilm.cache_features(False)
    for i in range(3):
        for d in alone[i]:
            n = alone[i][d].size(1)
            assert torch.allclose(first[d][i, :n], alone[i][d][0], atol=1e-6)
            assert first[d][i, n:].abs().sum() == 0
    for i, s in enumerate([3, 1, 0, 1]):
        for d in alone[s]:
            n = alone[s][d].size(1)
            assert torch.allclose(second[d][i, :n], alone[s][d][0], atol=1e-6)


def test_a_changed_layer_mask_empties_the_cache(bilm):
    with torch.no_grad():
        bilm.cache_features(True)
        try:
            layers_of(bilm, SENTENCES)
            bilm.layer_mask[0, 1] = 0.0
            masked = layers_of(bilm, SENTENCES)
            assert bilm.feature_cache.misses == 2 * len(SENTENCES)
            bilm.cache_features(False)
            expected = layers_of(bilm, SENTENCES)
        finally:
            bilm.layer_mask[0, 1] = 1.0
            bilm.cache_features(False)
    for d in expected:
        assert torch.allclose(masked[d], expected[d], atol=1e-6)


def test_no_cache_where_the_features_can_change(bilm):
    bilm.cache_features(True)
    try:
        bilm.set_layer_mask_trainable(True)
        layers, _ = bilm.layers(batch(SENTENCES))
        assert len(bilm.feature_cache) == 0 and layers["forward"][1].requires_grad
        bilm.set_layer_mask_trainable(False)
        bilm.lm_dropout = 0.5
        bilm.train(True)
        bilm.layers(batch(SENTENCES))
        assert len(bilm.feature_cache) == 0
        bilm.train(False)  # lm_dropout applies in training only
        bilm.layers(batch(SENTENCES))
        assert len(bilm.feature_cache) == len(SENTENCES)
    finally:
        bilm.lm_dropout = 0.0
        bilm.set_layer_mask_trainable(False)
        bilm.cache_features(False)


@pytest.mark.parametrize("kind", sorted(EMBEDDERS))
def test_the_callback_trains_the_same_model_and_leaves_no_cache(kind, tmp_path):
    """Two epochs with and without the callback: the same weights (the cached features are the
    computed ones up to float rounding in other batches), and the archive does not cache."""
    archives = fixture_lm_archives()
    embedder, input_size = EMBEDDERS[kind]
    weights = {}
    for name, callbacks in (("plain", []), ("cached", ["lm_feature_cache"])):
        config = tagger_config(embedder, input_size, archives)
        config["data_loader"]["shuffle"] = True
        config["trainer"].update(num_epochs=2, callbacks=callbacks)
        model = train_model(Params(config), serialization_dir=str(tmp_path / name))
        weights[name] = {k: v.clone() for k, v in model.state_dict().items()}
        assert all(bilm.feature_cache is None for _, bilm in find_dense_bilms(model))
    # the callback's report after each epoch: epoch 2 reads every sentence from the cache
    log = (tmp_path / "cached" / "out.log").read_text()
    reports = re.findall(r"(\d+) sentences cached, (\d+) hits, (\d+) misses", log)
    (cached, hits_1, misses_1), (_, hits_2, misses_2) = [tuple(map(int, r)) for r in reports]
    assert cached == misses_1 == misses_2 > 0 and hits_2 - hits_1 == hits_1 + misses_1
    assert weights["plain"].keys() == weights["cached"].keys()
    for key, value in weights["plain"].items():
        assert torch.allclose(value, weights["cached"][key], atol=1e-5), key
    loaded = load_archive(str(tmp_path / "cached" / "model.tar.gz")).model
    assert all(bilm.feature_cache is None for _, bilm in find_dense_bilms(loaded))
