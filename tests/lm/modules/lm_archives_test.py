"""
`lm/modules/lm_archives.py`: opening an LM archive (`load_dense_lm`, the registered
`dense_language_model_from_archive`) and the fingerprint of an LM's weights. The biLM's own use
of them (stored copies, weights by reference) is in `dense_bilm_test.py`.
"""

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp.models.archival import archive_model

from ldnet_allennlp.lm.models import DenseLanguageModel
from ldnet_allennlp.lm.modules.lm_archives import (
    DenseLanguageModelFromArchive,
    lm_weights_sha256,
    load_dense_lm,
)
from tests.lm.lm_archives import fixture_lm_archives


@pytest.fixture(scope="module")
def archives():
    return fixture_lm_archives()


def test_load_dense_lm_resolves_a_fine_tuned_lms_config(archives, tmp_path):
    """A `dense_language_model_from_archive` LM is stored as its base LM's config."""
    base, base_config = load_dense_lm(archives["forward"], "key", "forward")
    assert isinstance(base, DenseLanguageModel) and base_config["type"] == "dense_language_model"
    finetuned = tmp_path / "finetuned"
    (finetuned / "vocabulary").mkdir(parents=True)
    config = {"dataset_reader": {"type": "dense_lm_text"},
              "model": {"type": "dense_language_model_from_archive",
                        "archive_file": archives["forward"]}}  # fmt: skip
    Params(config).to_file(str(finetuned / "config.json"))
    base.vocab.save_to_files(str(finetuned / "vocabulary"))
    torch.save(base.state_dict(), finetuned / "best.th")
    archive_model(str(finetuned))
    model, stored = load_dense_lm(str(finetuned / "model.tar.gz"), "key", "forward")
    assert stored == base_config
    rebuilt = Model.from_params(vocab=model.vocab, params=Params(stored))
    assert isinstance(rebuilt, DenseLanguageModel)


def test_from_lm_archive_uses_the_same_loader_and_errors(archives):
    with pytest.raises(ConfigurationError, match=r"model.archive_file \(.*\) holds a 'forward'"):
        DenseLanguageModelFromArchive.from_lm_archive(archives["forward"], direction="backward")
    assert (
        DenseLanguageModelFromArchive.from_lm_archive(archives["backward"]).direction == "backward"
    )


def test_the_fingerprint_still_counts_the_stacks_old_mask_buffer(archives):
    """
    The sha256 that archives written with `store_lm_weights` false keep was taken when each
    `DenseLSTMStack` held a `layer_mask` buffer of ones: the fingerprint still counts it.
    """
    import hashlib

    lm, _ = load_dense_lm(archives["forward"], "key", "forward")
    state = dict(lm.state_dict())
    assert "_encoder.layer_mask" not in state
    state["_encoder.layer_mask"] = torch.ones(lm.num_layers)
    digest = hashlib.sha256()
    for name, value in sorted(state.items()):
        digest.update(f"{name}:{tuple(value.shape)}:".encode())
        digest.update(value.detach().to(torch.float32).contiguous().cpu().numpy().tobytes())
    assert lm_weights_sha256(lm) == digest.hexdigest()
