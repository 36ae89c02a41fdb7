"""
The fixture archives load and predict exactly what was recorded, and the one load hook the
shipped archives need does its job.

`fixtures/archives/` holds tiny archives of each kind (an LD-Net tagger, a pruned one, a
scalar-mix tagger, a distillation student, and the two LM archives the taggers were trained
with), made by `fixtures/archives/make_fixture_archives.py`, together with what they predict
(`expected_predictions.json`). A difference means that archives made by this code would load or
predict differently; re-make the fixtures only when that change is meant.

The shipped LMs (`pretrained/lm_forward.tar.gz`, `lm_backward.tar.gz`) hold a stack mask buffer,
`_encoder.layer_mask`, all ones, that `DenseLSTMStack` drops when it loads.
"""

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch

from allennlp.data import Token
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

import ldnet_allennlp  # noqa: F401  (registers our components)
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"
EXPECTED = json.loads((FIXTURE_ARCHIVES / "expected_predictions.json").read_text(encoding="utf-8"))
ARCHIVES: Dict[str, Dict[str, Any]] = EXPECTED["archives"]
TOLERANCE = 1e-4

TAGGERS = [name for name, entry in ARCHIVES.items() if entry["predictor"] == "ldnet_tagger"]
STUDENTS = [name for name, entry in ARCHIVES.items() if entry["predictor"] != "ldnet_tagger"]

SHIPPED_LM = PROJECT_ROOT / "pretrained" / "lm_forward.tar.gz"


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def assert_matches(actual: Any, expected: Any, where: str) -> None:
    """Equal, except that floats may differ by `TOLERANCE`."""
    if isinstance(expected, float) or isinstance(actual, float):
        assert isinstance(actual, (int, float)), f"{where}: {actual!r} is not a number"
        assert abs(actual - expected) <= TOLERANCE, f"{where}: {actual} != {expected}"
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: {actual!r} is not a list"
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_matches(a, e, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: {actual!r} is not a dict"
        assert sorted(actual) == sorted(expected), f"{where}: keys {sorted(actual)}"
        for key in expected:
            assert_matches(actual[key], expected[key], f"{where}.{key}")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def tagger_outputs(archive_path: Path) -> List[Dict[str, Any]]:
    """What make_fixture_archives.py recorded: predictor output, model logits and tags."""
    archive = load_archive(str(archive_path))
    predictor = Predictor.from_archive(archive, "ldnet_tagger")
    reader = archive.validation_dataset_reader
    results = []
    for inputs in ARCHIVES[archive_path.name[: -len(".tar.gz")]]["inputs"]:
        instance = reader.text_to_instance([Token(t) for t in inputs["tokens"]])
        reader.apply_token_indexers(instance)
        output = archive.model.forward_on_instance(instance)
        results.append(
            {
                "predictor": predictor.predict_json(inputs),
                "logits": output["logits"].tolist(),
                "tags": output["tags"],
            }
        )
    return results


@pytest.mark.parametrize("name", TAGGERS)
def test_tagger_archive_predicts_as_recorded(name, monkeypatch):
    # The archives name their LM archives relative to the repository root, where they are.
    monkeypatch.chdir(PROJECT_ROOT)
    assert_matches(
        tagger_outputs(FIXTURE_ARCHIVES / f"{name}.tar.gz"), ARCHIVES[name]["outputs"], name
    )


@pytest.mark.parametrize("name", STUDENTS)
def test_student_archive_predicts_as_recorded(name, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    predictor = Predictor.from_archive(load_archive(str(FIXTURE_ARCHIVES / f"{name}.tar.gz")))
    assert ARCHIVES[name]["predictor"] == "distillation_classifier"
    outputs = [predictor.predict_json(inputs) for inputs in ARCHIVES[name]["inputs"]]
    assert_matches(outputs, ARCHIVES[name]["outputs"], name)


@pytest.mark.parametrize("name", TAGGERS)
def test_tagger_archive_loads_and_predicts_without_the_lm_files(name, tmp_path, monkeypatch):
    # elsewhere, the relative LM paths of the archive's config name no file
    shutil.copy(FIXTURE_ARCHIVES / f"{name}.tar.gz", tmp_path / f"{name}.tar.gz")
    monkeypatch.chdir(tmp_path)
    config_paths = EXPECTED["made_by"]["lm_archives"]
    assert not any(Path(path).exists() for path in config_paths.values())
    assert_matches(tagger_outputs(tmp_path / f"{name}.tar.gz"), ARCHIVES[name]["outputs"], name)


def test_every_tagger_is_recorded_as_loading_without_the_lm_files():
    assert TAGGERS == ["ner_ldnet", "ner_ldnet_pruned", "ner_scalar_mix"]
    assert all(ARCHIVES[name]["loads_without_lm_files"] is True for name in TAGGERS)


@pytest.mark.skipif(not SHIPPED_LM.exists(), reason=f"{SHIPPED_LM} is not in this checkout")
def test_the_shipped_lms_stack_mask_buffer_of_ones_loads_and_any_other_is_refused():
    archive = load_archive(str(SHIPPED_LM))
    with tarfile.open(SHIPPED_LM) as tar:
        weights = torch.load(tar.extractfile("weights.th"), map_location="cpu")
    stored = weights["_encoder.layer_mask"]
    assert stored.tolist() == [1.0] * archive.model.num_layers
    assert "_encoder.layer_mask" not in archive.model.state_dict()
    archive.model.load_state_dict(weights)  # strict: the buffer is dropped, not unexpected
    weights["_encoder.layer_mask"] = stored.clone().index_fill_(0, torch.tensor([1]), 0.0)
    with pytest.raises(ValueError, match="_encoder.layer_mask holds .*always ones"):
        archive.model.load_state_dict(weights)
