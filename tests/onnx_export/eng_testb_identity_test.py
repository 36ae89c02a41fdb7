"""
The shipped NER tagger (`pretrained/MANIFEST.json`'s "ner"), exported by
`allennlp ldnet-export`, gives on the whole of CoNLL-03 eng.testb exactly the output of the
`ldnet_tagger` predictor (`allennlp predict`): tokens, tags and spans of every sentence, in
batches of 32 on both sides. Skipped, saying why, where the test file or the shipped tagger is
not here (`LDNET_SHARED_DATA` names the shared data folder, default `../shared/data`).
"""

import os
from pathlib import Path

import pytest

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_allennlp.pretrained import manifest, pretrained_dir
from ldnet_runtime import Tagger

DATA = Path(
    os.environ.get("LDNET_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
)
TEST_FILE = DATA / "conll2003" / "eng.testb"
BATCH_SIZE = 32


def shipped_ner_tagger() -> Path:
    entry = manifest().get("ner")
    if entry is None:
        pytest.skip("pretrained/MANIFEST.json has no 'ner' entry (the shipped NER tagger)")
    path = pretrained_dir() / entry["file"]
    if not path.exists():
        pytest.skip(f"the shipped NER tagger {path} is not here")
    return path


def test_the_exported_shipped_tagger_tags_eng_testb_as_allennlp(tmp_path, one_torch_thread):
    if not TEST_FILE.exists():
        pytest.skip(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    archive_file = shipped_ner_tagger()
    export_tagger(str(archive_file), str(tmp_path / "ner"))
    archive = load_archive(str(archive_file))
    predictor = Predictor.from_archive(archive, "ldnet_tagger")
    instances = archive.validation_dataset_reader.read(str(TEST_FILE))
    inputs = [{"tokens": [token.text for token in i["tokens"].tokens]} for i in instances]
    assert len(inputs) == 3453  # CoNLL-03 eng.testb's sentences
    runtime = Tagger(tmp_path / "ner", threads=1)
    different = []
    for start in range(0, len(inputs), BATCH_SIZE):
        batch = inputs[start : start + BATCH_SIZE]
        expected = predictor.predict_batch_json(batch)
        actual = runtime.predict_batch_json(batch)
        different += [start + i for i, (a, e) in enumerate(zip(actual, expected)) if a != e]
    assert different == [], f"{len(different)} sentences differ, e.g. {inputs[different[0]]}"
