"""
`ldnet_allennlp.patches.registrable_class_paths`: a config (an archive's `config.json` included)
names registered components only; a module path is refused before it is imported or called,
unless `LDNET_ALLOW_CLASS_PATHS=1`. The package's loading paths: `tests/archive_safety_test.py`.
"""

import tempfile

import pytest
from allennlp.common import Params
from allennlp.common.registrable import Registrable
from allennlp.data import DatasetReader
from allennlp.data.dataset_readers import SequenceTaggingDatasetReader
from allennlp.models import Model
from allennlp.models.archival import load_archive

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel
from ldnet_allennlp.patches import registrable_class_paths
from ldnet_allennlp.patches.registrable_class_paths import (
    ALLOW_CLASS_PATHS_VARIABLE,
    ClassPathError,
)
from tests.crafted_archives import LM_ARCHIVES, craft_config_archive

READER_PATH = "allennlp.data.dataset_readers.SequenceTaggingDatasetReader"


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_an_archive_config_naming_a_module_path_ran_it_with_allennlps_resolution(
    tmp_path, temp_root, monkeypatch
):
    # what the patch prevents: AllenNLP imports "os.mkdir" and calls it with the config's "path"
    marker = tmp_path / "CALLED"
    archive = tmp_path / "class_path.tar.gz"
    craft_config_archive(LM_ARCHIVES["forward"], archive, "dataset_reader", marker)
    original = classmethod(registrable_class_paths.ALLENNLP_RESOLVE_CLASS_NAME)
    monkeypatch.setattr(Registrable, "resolve_class_name", original)
    with pytest.raises(FileExistsError):  # called once for each of its two readers
        load_archive(str(archive))
    assert marker.is_dir()


def test_an_archive_config_naming_a_module_path_is_refused(tmp_path, temp_root):
    marker = tmp_path / "CALLED"
    archive = tmp_path / "class_path.tar.gz"
    class_path = craft_config_archive(LM_ARCHIVES["forward"], archive, "dataset_reader", marker)
    with pytest.raises(ClassPathError, match=f"Refusing the DatasetReader {class_path!r}"):
        load_archive(str(archive))
    assert not marker.exists()
    assert list(temp_root.iterdir()) == []


def test_every_way_of_naming_a_class_is_checked():
    with pytest.raises(ClassPathError, match="Refusing the DatasetReader 'os.system'"):
        DatasetReader.from_params(Params({"type": "os.system", "command": "true"}))
    with pytest.raises(ClassPathError, match="Refusing the Model 'os.getpid'"):
        Model.by_name("os.getpid")
    with pytest.raises(ClassPathError, match=ALLOW_CLASS_PATHS_VARIABLE):
        DatasetReader.resolve_class_name(READER_PATH)


def test_registered_names_resolve_as_before():
    assert Model.by_name("dense_language_model") is DenseLanguageModel
    reader = DatasetReader.from_params(Params({"type": "sequence_tagging"}))
    assert isinstance(reader, SequenceTaggingDatasetReader)


def test_class_paths_are_allowed_when_asked_for(monkeypatch):
    monkeypatch.setenv(ALLOW_CLASS_PATHS_VARIABLE, "1")
    assert DatasetReader.resolve_class_name(READER_PATH) == (SequenceTaggingDatasetReader, None)
