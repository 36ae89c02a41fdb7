"""
The drop-in claim: a config that uses `elmo_token_embedder` (allennlp-models'
`ner_elmo`) trains with our scalar mix after changing only the `elmo` indexer, the `elmo`
embedder and the encoder's `input_size`.
"""

from typing import Any, Dict

import pytest
import torch

from allennlp.common import Params
from allennlp.common.testing import ModelTestCase

from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.configs_test import FIXTURE_EXT_VARS

OURS = CONFIGS_ROOT / "elmo" / "ner_scalar_mix.jsonnet"
REFERENCE = FIXTURES_ROOT / "elmo" / "ner_elmo_reference.jsonnet"
SWAPPED = {
    "dataset_reader.token_indexers.elmo",
    "model.text_field_embedder.token_embedders.elmo",
    "model.encoder.input_size",
}


def flatten(config: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    flat = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def test_only_the_elmo_blocks_and_input_size_differ(real_width_lm_archives):
    ext_vars = dict(FIXTURE_EXT_VARS, **real_width_lm_archives)
    ours = flatten(Params.from_file(str(OURS), ext_vars=ext_vars).as_dict(quiet=True))
    reference = flatten(Params.from_file(str(REFERENCE), ext_vars=ext_vars).as_dict(quiet=True))
    # upstream's config also reads the test file at training time; no config of ours does
    # (tests/configs_test.py::test_no_training_config_names_a_test_file)
    for key in ("test_data_path", "evaluate_on_test"):
        reference.pop(key, None)
    changed = {
        path
        for path in set(ours) | set(reference)
        if ours.get(path, "<absent>") != reference.get(path, "<absent>")
    }
    assert {
        next(swapped for swapped in SWAPPED if path.startswith(swapped)) for path in changed
    } == SWAPPED
    assert ours["model.text_field_embedder.token_embedders.elmo.type"] == "dense_lm_scalar_mix"
    assert ours["dataset_reader.token_indexers.elmo.type"] == "dense_lm_tokens"
    assert ours["model.regularizer.regexes"] == reference["model.regularizer.regexes"]


class TestNerScalarMixConfig(ModelTestCase):
    def test_train_save_load(self, real_width_lm_archives, monkeypatch):
        for name, value in dict(FIXTURE_EXT_VARS, **real_width_lm_archives).items():
            monkeypatch.setenv(name, value)
        self.set_up_model(OURS, FIXTURE_EXT_VARS["CONLL03_TRAIN_DATA_PATH"])
        self.ensure_model_can_train_save_and_load(
            OURS, overrides='{"trainer.num_epochs": 2, "trainer.patience": null}'
        )
        # the L2 pull on the mixing weights is active: alpha 0.1 times their sum of squares
        mixing = [
            parameter
            for name, parameter in self.model.named_parameters()
            if "scalar_parameters" in name and parameter.requires_grad
        ]
        assert mixing
        with torch.no_grad():
            for index, parameter in enumerate(mixing):
                parameter.fill_(0.5 * (index + 1))
        expected = 0.1 * sum((0.5 * (index + 1)) ** 2 for index in range(len(mixing)))
        penalty = self.model.get_regularization_penalty()
        assert penalty.item() == pytest.approx(expected, rel=1e-6)
