"""
The physically pruned archive (`allennlp ldnet-prune`) against the masked model it came from.
"""

import json
import os
import tarfile

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.commands.train import train_model
from allennlp.common.params import with_overrides
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.lm.modules.dense_bilm import lm_weights_stored
from ldnet_allennlp.pruning.cut_layers import prune_archive, write_archive
from tests.cli import run_allennlp
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import lm_archive_ext_vars

DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")


def data_ext_vars():
    return {
        "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
        "CONLL03_DEV_DATA_PATH": DEV,
        "CONLL03_TEST_DATA_PATH": DEV,
        **lm_archive_ext_vars(),
    }


@pytest.fixture(scope="module")
def phase1(tmp_path_factory):
    """A trained ner_ldnet tagger on the fixtures (masks all 1)."""
    directory = tmp_path_factory.mktemp("phase1")
    params = Params.from_file(
        str(CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet"), ext_vars=data_ext_vars()
    )
    params = Params(with_overrides(params.as_dict(quiet=True), {"trainer.num_epochs": 2}))
    train_model(params, str(directory / "run"))
    return directory / "run" / "model.tar.gz"


def masked_archive(phase1, path, mask):
    """The phase-1 tagger with its layer masks set to `mask`, as an archive."""
    archive = load_archive(str(phase1))
    with torch.no_grad():
        archive.model.text_field_embedder.token_embedder_lm.layer_mask.copy_(torch.tensor(mask))
    write_archive(archive.config.as_dict(quiet=True), archive.model, str(path))
    return path


def predictions(archive_path, sentences):
    predictor = Predictor.from_archive(load_archive(str(archive_path)))
    return predictor.predict_batch_json([{"tokens": s} for s in sentences])


SENTENCES = [
    "John Smith visited Paris .".split(),
    "Shares in Acme Corp rose 3 percent in Germany .".split(),
    ["Reuters"],
]


def test_pruned_archive_predicts_like_the_masked_model(phase1, tmp_path):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[1.0, 0.0, 0.6], [0.0, 0.8, 1.0]])
    report = prune_archive(str(masked), str(tmp_path / "pruned.tar.gz"))

    name = "text_field_embedder.token_embedder_lm"
    assert report.kept_layers_before[name] == {"forward": [0, 1, 2], "backward": [0, 1, 2]}
    assert report.kept_layers_after[name] == {"forward": [0, 2], "backward": [1, 2]}
    assert report.parameters_after < report.parameters_before
    assert report.flops_per_token_after < report.flops_per_token_before

    pruned = load_archive(str(tmp_path / "pruned.tar.gz")).model
    embedder = pruned.text_field_embedder.token_embedder_lm
    assert embedder.forward_lm.encoder.num_layers == 2
    assert embedder.backward_lm.encoder.num_layers == 2
    # surviving masks stay as fixed multipliers
    assert embedder.layer_mask[0, 2].item() == pytest.approx(0.6)
    assert not embedder.layer_mask.requires_grad

    # same r_t, so the same emissions and tags
    masked_model = load_archive(str(masked)).model.eval()
    pruned.eval()
    ids = torch.tensor([[5, 7, 3, 9], [4, 2, 0, 0]])
    masked_r = masked_model.text_field_embedder.token_embedder_lm(ids)
    pruned_r = embedder(ids)
    assert torch.allclose(masked_r, pruned_r, atol=1e-5)
    assert predictions(masked, SENTENCES) == predictions(tmp_path / "pruned.tar.gz", SENTENCES)


def test_fp16_archive_stores_half_weights_and_loads_into_fp32(phase1, tmp_path):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[1.0, 0.0, 0.6], [0.0, 0.8, 1.0]])
    prune_archive(str(masked), str(tmp_path / "full.tar.gz"))
    prune_archive(str(masked), str(tmp_path / "half.tar.gz"), fp16=True)
    with tarfile.open(tmp_path / "half.tar.gz") as archive:
        stored = torch.load(archive.extractfile("weights.th"), weights_only=True)
    full_model = load_archive(str(tmp_path / "full.tar.gz")).model
    weights = {name for name, _ in full_model.named_parameters()}
    assert {stored[name].dtype for name in weights} == {torch.float16}
    # buffers keep their dtype (a count such as GloVe's 400,000 words would overflow fp16)
    assert all(
        v.dtype == full_model.state_dict()[k].dtype for k, v in stored.items() if k not in weights
    )
    full = full_model.state_dict()
    half = load_archive(str(tmp_path / "half.tar.gz")).model.state_dict()
    assert full.keys() == half.keys()
    for key, value in full.items():
        # the loaded model is fp32 again, with each weight rounded to fp16's precision
        assert half[key].dtype == value.dtype
        if key in weights:
            assert torch.equal(half[key], value.half().float()), key
        else:
            assert torch.equal(half[key], value), key
    assert (tmp_path / "half.tar.gz").stat().st_size < 0.7 * (
        tmp_path / "full.tar.gz"
    ).stat().st_size


def test_reference_lms_leaves_the_frozen_lm_weights_out(phase1, tmp_path, monkeypatch):
    import hashlib
    import shutil

    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[1.0, 0.0, 0.6], [0.0, 0.8, 1.0]])
    # a pretrained folder that ships the forward fixture LM (the backward one is not shipped)
    lms = lm_archive_ext_vars()
    shipped = tmp_path / "pretrained"
    shipped.mkdir()
    shutil.copy(lms["FORWARD_LM_ARCHIVE"], shipped / "lm_forward.tar.gz")
    data = (shipped / "lm_forward.tar.gz").read_bytes()
    entry = {"file": "lm_forward.tar.gz", "size_bytes": len(data)}
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (shipped / "MANIFEST.json").write_text(json.dumps({"lm_forward": entry}))
    monkeypatch.setenv("LDNET_PRETRAINED_DIR", str(shipped))

    prune_archive(str(masked), str(tmp_path / "full.tar.gz"))
    prune_archive(str(masked), str(tmp_path / "ref.tar.gz"), reference_lms=True)
    with tarfile.open(tmp_path / "ref.tar.gz") as archive:
        config = json.load(archive.extractfile("config.json"))
        stored = torch.load(archive.extractfile("weights.th"), weights_only=True)
    block = config["model"]["text_field_embedder"]["token_embedders"]["lm"]
    assert block["store_lm_weights"] is False
    # the shipped LM by name, the other by an absolute path: both found from any directory
    assert block["forward_lm_archive"] == "pretrained:lm_forward"
    assert block["backward_lm_archive"] == os.path.abspath(lms["BACKWARD_LM_ARCHIVE"])
    assert config["dataset_reader"]["token_indexers"]["lm"]["lm_archive"] == (
        "pretrained:lm_forward"
    )
    assert not [k for k in stored if ".forward_lm." in k or ".backward_lm." in k]
    assert stored["text_field_embedder.token_embedder_lm.bilm.lm_weights_sha256"].shape == (2, 32)
    assert (tmp_path / "ref.tar.gz").stat().st_size < (tmp_path / "full.tar.gz").stat().st_size
    full = load_archive(str(tmp_path / "full.tar.gz")).model.state_dict()
    model = load_archive(str(tmp_path / "ref.tar.gz")).model
    with lm_weights_stored(model):  # the LM weights it read from the LM archives
        by_reference = model.state_dict()
    assert full.keys() == by_reference.keys()
    assert all(torch.equal(full[k], by_reference[k]) for k in full)
    assert predictions(tmp_path / "ref.tar.gz", SENTENCES) == predictions(masked, SENTENCES)


def test_keep_all_layers_ships_an_unpruned_tagger_by_reference(phase1, tmp_path):
    # masks all 1 (an un-pruned tagger): nothing is removed, only the LM weights are left out
    report = prune_archive(
        str(phase1), str(tmp_path / "ref.tar.gz"), reference_lms=True, keep_all_layers=True
    )
    name = "text_field_embedder.token_embedder_lm"
    every_layer = {"forward": [0, 1, 2], "backward": [0, 1, 2]}
    assert report.kept_layers_before[name] == report.kept_layers_after[name] == every_layer
    assert report.parameters_after == report.parameters_before
    assert report.flops_per_token_after == report.flops_per_token_before
    assert (tmp_path / "ref.tar.gz").stat().st_size < phase1.stat().st_size
    with tarfile.open(tmp_path / "ref.tar.gz") as archive:
        config = json.load(archive.extractfile("config.json"))
    assert (
        config["model"]["text_field_embedder"]["token_embedders"]["lm"]["store_lm_weights"] is False
    )
    assert predictions(tmp_path / "ref.tar.gz", SENTENCES) == predictions(phase1, SENTENCES)
    # and with nothing else asked, it would only copy the tagger: refused, nothing written
    with pytest.raises(ConfigurationError, match="--keep-all-layers without --fp16"):
        prune_archive(str(phase1), str(tmp_path / "copy.tar.gz"), keep_all_layers=True)
    assert not (tmp_path / "copy.tar.gz").exists()


def test_a_direction_pruned_of_every_layer_keeps_its_token_embeddings(phase1, tmp_path):
    # what LD-Net's budget of 2 can give: one LM loses every layer (here the forward one)
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[0.0, 0.0, 0.0], [0.7, 0.0, 0.0]])
    report = prune_archive(str(masked), str(tmp_path / "pruned.tar.gz"))
    name = "text_field_embedder.token_embedder_lm"
    assert report.kept_layers_after[name] == {"forward": [], "backward": [0]}

    pruned = load_archive(str(tmp_path / "pruned.tar.gz")).model.eval()
    embedder = pruned.text_field_embedder.token_embedder_lm
    assert embedder.forward_lm.encoder.num_layers == 0
    assert len(list(embedder.forward_lm.encoder.parameters())) == 0
    masked_model = load_archive(str(masked)).model.eval()
    ids = torch.tensor([[5, 7, 3, 9], [4, 2, 0, 0]])
    masked_r = masked_model.text_field_embedder.token_embedder_lm(ids)
    assert torch.allclose(masked_r, embedder(ids), atol=1e-5)
    assert predictions(masked, SENTENCES) == predictions(tmp_path / "pruned.tar.gz", SENTENCES)


def test_pruned_archive_through_the_plain_cli(phase1, tmp_path):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    process = run_allennlp(
        ["ldnet-prune", str(masked), "-o", str(tmp_path / "pruned.tar.gz")]
        + ["--report-file", str(tmp_path / "report.json")]
    )
    assert "forward LM: layers [0, 1, 2] -> kept [1]" in process.stdout
    assert "FLOPs per token" in process.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["flops_per_token_after"] < report["flops_per_token_before"]

    inputs = tmp_path / "input.jsonl"
    inputs.write_text('{"sentence": "Maria Lopez visited Lake Geneva."}\n')
    output = tmp_path / "predictions.jsonl"
    run_allennlp(
        ["predict", str(tmp_path / "pruned.tar.gz"), str(inputs), "--output-file", str(output)]
        + ["--silent", "--include-package", "ldnet_allennlp"]
    )
    prediction = json.loads(output.read_text())
    assert prediction["tokens"] == ["Maria", "Lopez", "visited", "Lake", "Geneva", "."]
    metrics_file = tmp_path / "metrics.json"
    run_allennlp(
        ["evaluate", str(tmp_path / "pruned.tar.gz"), DEV, "--output-file", str(metrics_file)]
    )
    assert "f1-measure-overall" in json.loads(metrics_file.read_text())


def test_refusals(phase1, tmp_path):
    # masks all 1: nothing to remove (also what a pruned archive fed back to pruning gets)
    with pytest.raises(ConfigurationError, match="nothing to remove"):
        prune_archive(str(phase1), str(tmp_path / "out.tar.gz"))
    assert not (tmp_path / "out.tar.gz").exists()
    masked = masked_archive(phase1, tmp_path / "m.tar.gz", [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ConfigurationError, match="every layer mask of both LMs is 0"):
        prune_archive(str(masked), str(tmp_path / "out.tar.gz"))
    assert not (tmp_path / "out.tar.gz").exists()
    masked = masked_archive(phase1, tmp_path / "m2.tar.gz", [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    prune_archive(str(masked), str(tmp_path / "pruned.tar.gz"))
    with pytest.raises(ConfigurationError, match="nothing to remove"):
        prune_archive(str(tmp_path / "pruned.tar.gz"), str(tmp_path / "again.tar.gz"))


def test_refuses_a_tagger_without_layer_selection(tmp_path):
    config_file = str(CONFIGS_ROOT / "tagging" / "ner_vanilla.jsonnet")
    config = Params.from_file(config_file, ext_vars=data_ext_vars()).as_dict(quiet=True)
    params = Params.from_file(config_file, ext_vars=data_ext_vars())
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(DEV))
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    write_archive(config, model, str(tmp_path / "vanilla.tar.gz"))
    with pytest.raises(ConfigurationError, match="no layer_selection embedder"):
        prune_archive(str(tmp_path / "vanilla.tar.gz"), str(tmp_path / "out.tar.gz"))
