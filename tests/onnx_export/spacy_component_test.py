"""
The spaCy component `ldnet_ner` (`ldnet_runtime/spacy_component.py`), found through the
`spacy_factories` entry point: its `doc.ents` are the `ldnet_tagger` predictor's spans (type as
label), on the fixtures' pruned tagger (always) and, with `{"model": "ner"}` (the shipped tagger,
exported into a cache folder on first use), on the first 200 sentences of CoNLL-03 eng.testb
(skipped, saying why, where the file is not here).
"""

import shutil

import pytest
import spacy
from spacy.tokens import Doc

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.pretrained import manifest
from ldnet_runtime.shipped_exports import CACHE_ENV, export_dir_of
from tests.onnx_export.conftest import LEGACY
from tests.onnx_export.eng_testb_identity_test import TEST_FILE, shipped_ner_tagger

SENTENCES = [
    ["John", "Smith", "visited", "Zanzibar", "."],
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Peter", "Blackburn"],
    ["Qqxzvw"],
]


def entities(doc: Doc):
    return [(ent.label_, ent.start, ent.end - 1) for ent in doc.ents]


def predicted(predictor: Predictor, tokens):
    spans = predictor.predict_json({"tokens": tokens})["spans"]
    return [(span["type"], span["start"], span["end"]) for span in spans]


def test_the_component_sets_the_predictors_spans(legacy_exports):
    predictor = Predictor.from_archive(
        load_archive(str(LEGACY / "ner_ldnet_pruned.tar.gz")), "ldnet_tagger"
    )
    nlp = spacy.blank("en")
    config = {"model": str(legacy_exports["ner_ldnet_pruned"]), "threads": 1, "batch_size": 3}
    nlp.add_pipe("ldnet_ner", config=config)  # no import: the entry point
    expected = [predicted(predictor, tokens) for tokens in SENTENCES]
    assert any(expected)
    docs = [Doc(nlp.vocab, words=tokens) for tokens in SENTENCES]
    assert [entities(nlp(doc)) for doc in docs] == expected
    docs = [Doc(nlp.vocab, words=tokens) for tokens in SENTENCES + [[]]]
    assert [entities(doc) for doc in nlp.pipe(docs)] == expected + [[]]

    # raw text: the predictor's tokens (spaCy's English tokenizer); a whitespace token is skipped
    doc = nlp("John Smith  visited Zanzibar.")
    tokens = [token.text for token in doc if not token.is_space]
    kept = [token.i for token in doc if not token.is_space]
    spans = predictor.predict_json({"sentence": "John Smith visited Zanzibar."})["spans"]
    assert tokens == predictor.predict_json({"sentence": "John Smith visited Zanzibar."})["tokens"]
    assert entities(doc) == [(s["type"], kept[s["start"]], kept[s["end"]]) for s in spans]
    assert all(ent.label_ in {"PER", "LOC", "ORG", "MISC"} for ent in doc.ents)


def test_a_shipped_name_uses_its_cached_export(legacy_exports, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    sha = manifest()["ner_pruned"]["sha256"]
    cached = tmp_path / f"ner_pruned-{sha[:12]}"
    shutil.copytree(legacy_exports["ner_ldnet_pruned"], cached)
    assert export_dir_of("ner_pruned") == cached  # found, not exported again
    with pytest.raises(RuntimeError, match="neither a folder .* nor a shipped tagger"):
        export_dir_of("no_such_tagger")
    with pytest.raises(RuntimeError, match="is not a folder that allennlp ldnet-export wrote"):
        export_dir_of(str(tmp_path / "missing" / "folder"))


def test_the_shipped_ner_matches_the_predictor_on_eng_testb(tmp_path, monkeypatch):
    if not TEST_FILE.exists():
        pytest.skip(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    archive = load_archive(str(shipped_ner_tagger()))
    predictor = Predictor.from_archive(archive, "ldnet_tagger")
    instances = list(archive.validation_dataset_reader.read(str(TEST_FILE)))[:200]
    sentences = [[token.text for token in i["tokens"].tokens] for i in instances]

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # exported here, once (the full install)
    nlp = spacy.blank("en")
    nlp.add_pipe("ldnet_ner", config={"model": "ner", "threads": 1})
    docs = nlp.pipe(Doc(nlp.vocab, words=tokens) for tokens in sentences)
    actual = [entities(doc) for doc in docs]
    expected = []
    for start in range(0, len(sentences), 32):
        batch = [{"tokens": tokens} for tokens in sentences[start : start + 32]]
        for output in predictor.predict_batch_json(batch):
            expected.append([(s["type"], s["start"], s["end"]) for s in output["spans"]])
    assert sum(map(len, expected)) > 200  # eng.testb's first 200 sentences hold many entities
    different = [i for i, (a, e) in enumerate(zip(actual, expected)) if a != e]
    assert different == [], f"{len(different)} sentences differ, e.g. {sentences[different[0]]}"
