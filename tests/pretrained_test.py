"""
`ldnet_allennlp.pretrained`: shipped archives by name (`"pretrained:<name>"`), the shipped LMs'
integrity, and a tagger built on named LMs that reloads once the named folder is gone.
"""

import hashlib
import json
import shutil

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import with_overrides
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel
from ldnet_allennlp.lm.modules.lm_archives import load_dense_lm
from ldnet_allennlp.pretrained import load_pretrained, manifest, pretrained_dir, resolve_archive
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import build_lm_archive_ext_vars


def test_names_resolve_to_the_shipped_files_and_other_paths_are_unchanged():
    assert resolve_archive("runs/lm_forward/model.tar.gz") == "runs/lm_forward/model.tar.gz"
    path = resolve_archive("pretrained:lm_forward")
    assert path == str(pretrained_dir() / "lm_forward.tar.gz")


def test_an_unknown_name_lists_the_shipped_ones():
    with pytest.raises(ConfigurationError, match=r"no pretrained model named 'nope'.*lm_backward"):
        resolve_archive("pretrained:nope")


def test_a_missing_folder_says_which_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("LDNET_PRETRAINED_DIR", str(tmp_path))
    with pytest.raises(ConfigurationError, match="LDNET_PRETRAINED_DIR"):
        resolve_archive("pretrained:lm_forward")


@pytest.mark.parametrize("name", ["lm_forward", "lm_backward"])
def test_the_shipped_lms_match_their_manifest_and_load_by_name(name):
    facts = manifest()[name]
    path = pretrained_dir() / facts["file"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == facts["sha256"]
    assert path.stat().st_size == facts["size_bytes"]
    lm, config = load_dense_lm(f"pretrained:{name}", "forward_lm_archive", facts["direction"])
    assert isinstance(lm, DenseLanguageModel) and lm.direction == facts["direction"]
    assert sum(p.numel() for p in lm.parameters()) == facts["parameters"]
    assert config["encoder"]["num_layers"] == lm.num_layers == 6


def test_a_tagger_on_named_lms_reloads_without_the_named_folder(tmp_path, monkeypatch):
    # a pretrained folder of two tiny fixture LMs, named as the shipped ones are
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    lms = build_lm_archive_ext_vars(tmp_path / "lms")
    entries = {}
    for name, variable in (("fwd", "FORWARD_LM_ARCHIVE"), ("bwd", "BACKWARD_LM_ARCHIVE")):
        shutil.copy(lms[variable], shipped / f"{name}.tar.gz")
        entries[name] = {"file": f"{name}.tar.gz"}
    (shipped / "MANIFEST.json").write_text(json.dumps(entries))
    monkeypatch.setenv("LDNET_PRETRAINED_DIR", str(shipped))
    ext_vars = {
        "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
        "CONLL03_DEV_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"),
        "CONLL03_TEST_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"),
        "FORWARD_LM_ARCHIVE": "pretrained:fwd",
        "BACKWARD_LM_ARCHIVE": "pretrained:bwd",
    }
    config = str(CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet")
    params = Params.from_file(config, ext_vars=ext_vars)
    params = Params(with_overrides(params.as_dict(quiet=True), {"trainer.num_epochs": 1}))
    train_model(params, serialization_dir=str(tmp_path / "run"))
    sentence = {"tokens": ["Maria", "Lopez", "visited", "Geneva", "."]}
    archive = str(tmp_path / "run" / "model.tar.gz")
    before = load_archive(archive)
    shutil.rmtree(shipped)  # the named LMs are gone: the tagger's stored copies are used
    after = load_archive(archive)
    before_state, after_state = before.model.state_dict(), after.model.state_dict()
    assert before_state.keys() == after_state.keys()
    for key in before_state:
        assert torch.equal(before_state[key], after_state[key]), key
    predictions = [
        Predictor.from_archive(loaded, "ldnet_tagger").predict_json(sentence)
        for loaded in (before, after)
    ]
    assert predictions[0] == predictions[1]


def test_load_pretrained_refuses_unknown_names_and_language_models():
    with pytest.raises(ConfigurationError, match=r"no pretrained model named 'nope'"):
        load_pretrained("nope")
    with pytest.raises(
        ConfigurationError, match=r'not a tagger: use it as "pretrained:lm_forward"'
    ):
        load_pretrained("lm_forward")
    with pytest.raises(
        ConfigurationError, match=r"'ner_pruned_runtime' is the runtime export of 'ner_pruned'"
    ):
        load_pretrained("ner_pruned_runtime")
