"""
The dense biLM module: one loader for LM archives, the same behaviour under both embedders
(their archives reload without the LM files, the same key names), and one way to find the masks.
"""

import logging
import os
import shutil

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder

from ldnet_allennlp.lm.modules.dense_bilm import DenseBiLm, find_dense_bilms
from tests.conftest import FIXTURES_ROOT
from tests.lm.lm_archives import fixture_lm_archives

TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
# the fixture LMs: 3 layers of 4 over 6-d words; the scalar mix's layers are 2 x 6 wide
EMBEDDERS = {
    "layer_selection": ({"type": "layer_selection", "projection_dim": 5}, 5),
    "dense_lm_scalar_mix": ({"type": "dense_lm_scalar_mix", "dropout": 0.0}, 12),
}


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


@pytest.fixture(scope="module")
def archives():
    return fixture_lm_archives()


def tagger_config(embedder, input_size, archives):
    block = dict(embedder)
    block["forward_lm_archive"] = archives["forward"]
    block["backward_lm_archive"] = archives["backward"]
    return {
        "dataset_reader": {
            "type": "conll2003",
            "tag_label": "ner",
            "convert_to_coding_scheme": "BIOUL",
            "token_indexers": {"lm": {"type": "dense_lm_tokens"}},
        },
        "train_data_path": TRAIN,
        "validation_data_path": DEV,
        "model": {
            "type": "crf_tagger",
            "label_encoding": "BIOUL",
            "include_start_end_transitions": False,
            "text_field_embedder": {"token_embedders": {"lm": block}},
            "encoder": {"type": "lstm", "input_size": input_size, "hidden_size": 4},
        },
        "data_loader": {"batch_size": 8},
        "trainer": {"num_epochs": 1, "optimizer": {"type": "adam", "lr": 0.01}},
    }


def logits(archive_path):
    archive = load_archive(archive_path)
    reader = archive.validation_dataset_reader
    sentences = [["John", "Smith", "visited", "Paris", "."], ["Zürich", "🙂", "said", "it"]]
    instances = [reader.text_to_instance([Token(w) for w in s]) for s in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return [output["logits"] for output in archive.model.eval().forward_on_instances(instances)]


@pytest.mark.parametrize("kind", sorted(EMBEDDERS))
def test_archive_loads_and_predicts_the_same_without_the_lm_files(kind, archives, tmp_path):
    copies = {}
    for direction, path in archives.items():
        copies[direction] = str(tmp_path / f"lm_{direction}.tar.gz")
        shutil.copy(path, copies[direction])
    embedder, input_size = EMBEDDERS[kind]
    params = Params(tagger_config(embedder, input_size, copies))
    train_model(params, serialization_dir=str(tmp_path / "run"))
    archive_path = str(tmp_path / "run" / "model.tar.gz")
    with_files = logits(archive_path)
    for path in copies.values():
        os.remove(path)
    without_files = logits(archive_path)
    for before, after in zip(with_files, without_files):
        assert before.shape == after.shape and abs(before - after).max() == 0, abs(
            before - after
        ).max()


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_old_scalar_mix_key_works_with_a_warning_naming_the_new_key(direction, archives, caplog):
    params = {
        "type": "dense_lm_scalar_mix",
        "forward_lm_archive": archives["forward"],
        "backward_lm_archive": archives["backward"],
    }
    params[f"{direction}_archive"] = params.pop(f"{direction}_lm_archive")
    both = dict(params, **{f"{direction}_lm_archive": archives[direction]})
    new_key = f"'{direction}_lm_archive'"
    with caplog.at_level(logging.WARNING), pytest.warns(DeprecationWarning, match=new_key):
        embedder = TokenEmbedder.from_params(Params(dict(params)))
    assert new_key in caplog.text
    assert embedder.get_output_dim() == 12
    with pytest.raises(ConfigurationError, match=f"give {direction}_lm_archive only"):
        TokenEmbedder.from_params(Params(both))


def test_both_embedders_take_the_same_keys():
    import inspect

    from ldnet_allennlp.lm.token_embedders import (
        DenseLMScalarMixEmbedder,
        LayerSelectionTokenEmbedder,
    )

    for embedder in (DenseLMScalarMixEmbedder, LayerSelectionTokenEmbedder):
        keys = inspect.signature(embedder.__init__).parameters
        assert {"forward_lm_archive", "backward_lm_archive", "vocab_namespace"} <= set(keys)


def test_find_dense_bilms_in_both_embedders(archives):
    model = torch.nn.ModuleDict(
        {
            kind: TokenEmbedder.from_params(
                Params(
                    dict(
                        EMBEDDERS[kind][0],
                        forward_lm_archive=archives["forward"],
                        backward_lm_archive=archives["backward"],
                    )
                )
            )
            for kind in EMBEDDERS
        }
    )
    found = dict(find_dense_bilms(model))
    assert sorted(found) == ["dense_lm_scalar_mix._elmo._elmo_lstm", "layer_selection.bilm"]
    assert all(isinstance(bilm, DenseBiLm) for bilm in found.values())
    assert found["layer_selection.bilm"].layer_mask is model["layer_selection"].layer_mask
    assert all(bilm.layer_mask.shape == (2, 3) for bilm in found.values())


# ---------------------------------------------------------------- LM weights by reference


def train_tagger(embedder, input_size, lms, directory):
    train_model(Params(tagger_config(embedder, input_size, lms)), serialization_dir=str(directory))
    return str(directory / "model.tar.gz")


def stored_weights(archive_path, directory):
    import tarfile

    with tarfile.open(archive_path) as archive:
        archive.extract("weights.th", path=directory)
    return torch.load(os.path.join(directory, "weights.th"))


@pytest.mark.parametrize("kind", sorted(EMBEDDERS))
def test_lm_weights_by_reference_round_trip(kind, archives, tmp_path):
    """`store_lm_weights: false`: the archive keeps a fingerprint, not the LM weights, and
    predicts exactly what the same training run with the weights stored predicts."""
    copies = {}
    for direction, path in archives.items():
        copies[direction] = str(tmp_path / f"lm_{direction}.tar.gz")
        shutil.copy(path, copies[direction])
    embedder, input_size = EMBEDDERS[kind]
    full = train_tagger(embedder, input_size, copies, tmp_path / "full")
    by_reference = train_tagger(
        dict(embedder, store_lm_weights=False), input_size, copies, tmp_path / "ref"
    )

    full_state = stored_weights(full, tmp_path / "full_weights")
    state = stored_weights(by_reference, tmp_path / "ref_weights")
    lm_keys = {k for k in full_state if "forward_lm." in k or "backward_lm." in k}
    assert lm_keys and not lm_keys & set(state)
    assert set(state) - set(full_state) == {k for k in state if k.endswith("lm_weights_sha256")}
    (fingerprint_key,) = set(state) - set(full_state)
    assert state[fingerprint_key].dtype == torch.uint8 and state[fingerprint_key].shape == (2, 32)
    bilm = dict(find_dense_bilms(load_archive(full).model))
    (bilm,) = bilm.values()
    from ldnet_allennlp.lm.modules.lm_archives import lm_weights_sha256

    assert bytes(state[fingerprint_key][1].tolist()).hex() == lm_weights_sha256(bilm.backward_lm)
    assert os.path.getsize(by_reference) < os.path.getsize(full)

    for before, after in zip(logits(full), logits(by_reference)):
        assert before.shape == after.shape and abs(before - after).max() == 0

    # another LM of the same vocabulary under the same path: refused, naming key and file
    from tests.lm.lm_archives import train_lm_archive

    other = train_lm_archive(tmp_path / "other", "forward", seed=7)
    shutil.copy(other, copies["forward"])
    with pytest.raises(ConfigurationError, match="forward_lm_archive .* is not the LM this model"):
        load_archive(by_reference)
    # the full archive does not care: it brings its own LM weights
    logits(full)

    # no LM file: a full archive rebuilds the LM from its copy, a by-reference one cannot
    os.remove(copies["forward"])
    with pytest.raises(ConfigurationError, match="forward_lm_archive .* does not exist"):
        load_archive(by_reference)


def test_lm_weights_by_reference_needs_frozen_lms(archives):
    params = dict(
        EMBEDDERS["dense_lm_scalar_mix"][0],
        forward_lm_archive=archives["forward"],
        backward_lm_archive=archives["backward"],
        requires_grad=True,
        store_lm_weights=False,
    )
    with pytest.raises(ConfigurationError, match="store_lm_weights false needs frozen LMs"):
        TokenEmbedder.from_params(Params(params))
