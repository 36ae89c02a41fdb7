"""
Archives made by older code still load and predict exactly as they did then.

`fixtures/legacy_archives/` holds tiny archives of each kind (an LD-Net tagger, a pruned one, a
scalar-mix tagger, a distillation student, and the two LM archives the taggers were trained
with), made by `fixtures/legacy_archives/make_legacy_archives.py` at the commit recorded in
`expected_predictions.json`, together with what they predicted then. Never regenerate them to
make this test pass: a difference means that archives users already have would change.
"""

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

from allennlp.common.checks import ConfigurationError
from allennlp.data import Token
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

import ldnet_allennlp  # noqa: F401  (registers our components)
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT

LEGACY = FIXTURES_ROOT / "legacy_archives"
EXPECTED = json.loads((LEGACY / "expected_predictions.json").read_text(encoding="utf-8"))
ARCHIVES: Dict[str, Dict[str, Any]] = EXPECTED["archives"]
TOLERANCE = 1e-4

TAGGERS = [name for name, entry in ARCHIVES.items() if entry["predictor"] == "ldnet_tagger"]
STUDENTS = [name for name, entry in ARCHIVES.items() if entry["predictor"] != "ldnet_tagger"]

# Tagger archives that, made by the recorded commit, do not load when the LM archive files their
# config names are absent (the recorded `loads_without_lm_files: false`). Expected to fail
# (strictly: once the code makes one load, take it out of this set).
STILL_NEED_LM_FILES = {"ner_scalar_mix"}


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
    """What make_legacy_archives.py recorded: predictor output, model logits and tags."""
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
    assert_matches(tagger_outputs(LEGACY / f"{name}.tar.gz"), ARCHIVES[name]["outputs"], name)


@pytest.mark.parametrize("name", STUDENTS)
def test_student_archive_predicts_as_recorded(name, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    predictor = Predictor.from_archive(load_archive(str(LEGACY / f"{name}.tar.gz")))
    assert ARCHIVES[name]["predictor"] == "distillation_classifier"
    outputs = [predictor.predict_json(inputs) for inputs in ARCHIVES[name]["inputs"]]
    assert_matches(outputs, ARCHIVES[name]["outputs"], name)


@pytest.mark.parametrize(
    "name",
    [
        (
            pytest.param(
                name,
                marks=pytest.mark.xfail(
                    raises=ConfigurationError,
                    strict=True,
                    reason="this legacy archive needed its LM archive files to load",
                ),
            )
            if name in STILL_NEED_LM_FILES
            else name
        )
        for name in TAGGERS
    ],
)
def test_tagger_archive_loads_and_predicts_without_the_lm_files(name, tmp_path, monkeypatch):
    # elsewhere, the relative LM paths of the archive's config name no file
    shutil.copy(LEGACY / f"{name}.tar.gz", tmp_path / f"{name}.tar.gz")
    monkeypatch.chdir(tmp_path)
    config_paths = EXPECTED["made_by"]["lm_archives"]
    assert not any(Path(path).exists() for path in config_paths.values())
    assert_matches(tagger_outputs(tmp_path / f"{name}.tar.gz"), ARCHIVES[name]["outputs"], name)


def test_recorded_lm_file_needs_are_the_ones_expected_to_fail():
    recorded = {name for name in TAGGERS if not ARCHIVES[name]["loads_without_lm_files"]}
    assert STILL_NEED_LM_FILES <= recorded
