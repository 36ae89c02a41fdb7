"""
The spaCy component `ldnet_ner` (`ldnet_runtime/spacy_component.py`), found through the
`spacy_factories` entry point: its `doc.ents` are the `ldnet_tagger` predictor's spans (type as
label), on the fixtures' pruned tagger (always) and, with `{"model": "ner"}` (the shipped tagger,
exported into a cache folder on first use), on the first 200 sentences of CoNLL-03 eng.testb
(skipped, saying why, where the file is not here). As spaCy's own components: a saved pipeline
moved elsewhere loads and tags the same (`to_disk` / `spacy.load`); sentence by sentence where
the doc has boundaries; the `labels` map and `nlp.pipe_labels`; `overwrite_ents`; the batch size
`nlp.pipe` gives; `n_process=2`; bad config refused with the key named.
"""

import pickle
import shutil

import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import ConfigValidationError

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.pretrained import manifest
from ldnet_runtime import Tagger
from ldnet_runtime.shipped_exports import CACHE_ENV, export_dir_of
from tests.onnx_export.conftest import FIXTURE_ARCHIVES
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


def test_the_component_sets_the_predictors_spans(fixture_exports):
    predictor = Predictor.from_archive(
        load_archive(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")), "ldnet_tagger"
    )
    nlp = spacy.blank("en")
    config = {"model": str(fixture_exports["ner_ldnet_pruned"]), "threads": 1, "batch_size": 3}
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


def test_a_shipped_name_uses_its_cached_export(fixture_exports, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    sha = manifest()["ner_pruned"]["sha256"]
    cached = tmp_path / f"ner_pruned-{sha[:12]}"
    shutil.copytree(fixture_exports["ner_ldnet_pruned"], cached)
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


TEXT = (
    "John Smith visited Zanzibar. EU rejects German call to boycott British lamb. "
    "Peter Blackburn met Qqxzvw in Bonn."
)
TEXTS = [TEXT, "Peter Blackburn", "", "EU rejects German call.  John Smith visited Zanzibar."]


def labelled(doc: Doc):
    return [(ent.start, ent.end, ent.label_) for ent in doc.ents]


@pytest.fixture
def export_copy(fixture_exports, tmp_path):
    """A copy of the fixtures' pruned export that a test may delete."""
    copy = tmp_path / "export"
    shutil.copytree(fixture_exports["ner_ldnet_pruned"], copy)
    return copy


def test_a_saved_pipeline_moved_elsewhere_loads_and_tags_the_same(export_copy, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"model": str(export_copy), "labels": {"PER": "PERSON"}, "overwrite_ents": False}
    nlp.add_pipe("ldnet_ner", config={**config, "threads": 1, "batch_size": 2})
    expected = [labelled(doc) for doc in nlp.pipe(TEXTS)]
    assert any(expected)
    nlp.to_disk(tmp_path / "saved")
    moved = tmp_path / "elsewhere" / "pipeline"
    shutil.move(tmp_path / "saved", moved)
    shutil.rmtree(export_copy)  # the folder the config names is gone: only the copy is left

    loaded = spacy.load(moved)
    component = loaded.get_pipe("ldnet_ner")
    assert loaded.config["components"]["ldnet_ner"]["model"] == str(export_copy)
    assert component.tagger.export_dir == moved / "ldnet_ner"
    assert component.label_map == {"PER": "PERSON"} and component.overwrite_ents is False
    assert [labelled(doc) for doc in loaded.pipe(TEXTS)] == expected
    assert [labelled(loaded(text)) for text in TEXTS] == expected
    assert loaded.pipe_labels["ldnet_ner"] == ["LOC", "MISC", "ORG", "PERSON"]

    # saved again: where it was loaded from (nothing to copy), elsewhere, over an earlier save
    loaded.to_disk(moved)
    loaded.to_disk(tmp_path / "again")
    loaded.to_disk(tmp_path / "again")
    assert [labelled(doc) for doc in spacy.load(tmp_path / "again").pipe(TEXTS)] == expected
    # the component's folder is an export folder: the runtime tags with it as with any
    assert Tagger(moved / "ldnet_ner").predict_json({"tokens": ["Peter", "Blackburn"]})["spans"]

    (tmp_path / "other" / "ldnet_ner").mkdir(parents=True)
    (tmp_path / "other" / "ldnet_ner" / "notes.txt").write_text("not an export")
    with pytest.raises(ValueError, match="other/ldnet_ner exists and is not an export folder"):
        loaded.to_disk(tmp_path / "other")
    assert (tmp_path / "other" / "ldnet_ner" / "notes.txt").exists()


def test_sentences_are_tagged_one_at_a_time(fixture_exports):
    model = str(fixture_exports["ner_ldnet_pruned"])
    nlp = spacy.blank("en")
    nlp.add_pipe("ldnet_ner", config={"model": model, "threads": 1})
    with_sentences = spacy.blank("en")
    with_sentences.add_pipe("sentencizer")
    with_sentences.add_pipe("ldnet_ner", config={"model": model, "threads": 1})

    for text in TEXTS:
        doc = with_sentences(text)
        assert doc.has_annotation("SENT_START")
        expected = []
        for sentence in doc.sents:  # each sentence alone, as a doc of its own tokens
            alone = nlp(
                Doc(nlp.vocab, words=[t.text for t in sentence], spaces=[False] * len(sentence))
            )
            expected += [
                (sentence.start + s, sentence.start + e, label) for s, e, label in labelled(alone)
            ]
        assert labelled(doc) == expected, text
        assert [labelled(d) for d in with_sentences.pipe([text, text], batch_size=2)] == [
            expected
        ] * 2

    # a doc without boundaries is one sequence; here that tags differently, so the sentences matter
    whole = nlp(TEXT)
    assert not whole.has_annotation("SENT_START")
    assert labelled(whole) != labelled(with_sentences(TEXT))
    tokens = [token.text for token in whole]
    assert labelled(whole) == [
        (s["start"], s["end"] + 1, s["type"])
        for s in Tagger(model, threads=1).predict_json({"tokens": tokens})["spans"]
    ]
    # boundaries set on the doc's tokens (here: the predictor's sentences) are followed as well
    words = [token for sentence in SENTENCES for token in sentence]
    starts = [i == 0 for sentence in SENTENCES for i in range(len(sentence))]
    doc = nlp(Doc(nlp.vocab, words=words, sent_starts=starts))
    offsets = [sum(map(len, SENTENCES[:i])) for i in range(len(SENTENCES))]
    singles = [labelled(nlp(Doc(nlp.vocab, words=sentence))) for sentence in SENTENCES]
    assert labelled(doc) == [
        (offset + s, offset + e, label)
        for offset, ents in zip(offsets, singles)
        for s, e, label in ents
    ]


def test_no_entity_runs_across_a_blank_line(fixture_exports):
    model = str(fixture_exports["ner_ldnet_pruned"])
    nlp = spacy.blank("en")
    nlp.add_pipe("ldnet_ner", config={"model": model, "threads": 1})
    first, second = "She met Peter", "Blackburn said ."
    alone = [entities(nlp(text)) for text in (first, second)]
    doc = nlp(f"{first}\n\n{second}")  # tokens: She met Peter \n\n Blackburn said .
    assert [token.text for token in doc][3] == "\n\n"
    assert entities(doc) == alone[0] + [(label, s + 4, e + 4) for label, s, e in alone[1]]
    assert entities(doc) != entities(nlp(f"{first}\n{second}"))  # a line break is no cut
    spans = Tagger(model, threads=1).tag(f"{first}\n\n{second}")["spans"]
    assert [ent.text.split() for ent in doc.ents] == [span["text"].split() for span in spans]


def test_the_label_map_and_pipe_labels(fixture_exports):
    model = str(fixture_exports["ner_ldnet_pruned"])
    plain = spacy.blank("en")
    plain.add_pipe("ldnet_ner", config={"model": model, "threads": 1})
    assert plain.pipe_labels == {"ldnet_ner": ["LOC", "MISC", "ORG", "PER"]}
    nlp = spacy.blank("en")
    labels = {"PER": "PERSON", "MISC": "NORP", "LOC": "GPE"}
    nlp.add_pipe("ldnet_ner", config={"model": model, "threads": 1, "labels": labels})
    assert nlp.pipe_labels == {"ldnet_ner": ["GPE", "NORP", "ORG", "PERSON"]}
    for text in TEXTS:
        expected = [(s, e, labels.get(label, label)) for s, e, label in labelled(plain(text))]
        assert labelled(nlp(text)) == expected
    found = {label for t in TEXTS for _, _, label in labelled(nlp(t))}
    assert {"NORP", "GPE"} <= found <= set(nlp.pipe_labels["ldnet_ner"])

    # a type the tagger does not tag: refused when the tagger loads (nlp.initialize() loads it)
    wrong = spacy.blank("en")
    wrong.add_pipe("ldnet_ner", config={"model": model, "labels": {"PERSON": "PER"}})
    with pytest.raises(
        ValueError, match=r"labels maps \['PERSON'\].*\['LOC', 'MISC', 'ORG', 'PER'\]"
    ):
        wrong.initialize()


BAD_CONFIGS = [
    # (config, where spaCy's own validation names the key, or the component's sentence)
    ({"labels": {"PER": 5}}, "labels\tat PER: 5 is not <class 'str'>"),
    ({"labels": ["PER"]}, "labels\tat root"),
    ({"labels": {"PER": ""}}, "labels['PER'] must be a non-empty string, not ''"),
    ({"overwrite_ents": "no"}, "overwrite_ents\tat root"),
    ({"batch_size": 0}, "batch_size must be a whole number >= 1, not 0"),
    ({"threads": 0}, "threads must be a whole number >= 1, not 0"),
    ({"model": ""}, "model must be an export folder or a shipped tagger's name, not ''"),
]


@pytest.mark.parametrize("config, message", BAD_CONFIGS, ids=lambda v: str(v)[:30])
def test_bad_config_is_refused_with_the_key_named(config, message):
    nlp = spacy.blank("en")
    with pytest.raises((ConfigValidationError, ValueError)) as error:
        nlp.add_pipe("ldnet_ner", config=config)
    assert message in str(error.value)


def test_existing_entities_are_replaced_or_kept(fixture_exports):
    model = str(fixture_exports["ner_ldnet_pruned"])
    patterns = [{"label": "RULE", "pattern": word} for word in ["Zanzibar", "German"]]

    def pipeline(*names, **config):
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        if "entity_ruler" in names:
            nlp.add_pipe("entity_ruler").add_patterns(patterns)
        if "ldnet_ner" in names:
            nlp.add_pipe("ldnet_ner", config={"model": model, "threads": 1, **config})
        return nlp

    tagged = labelled(pipeline("ldnet_ner")(TEXT))
    ruled = labelled(pipeline("entity_ruler")(TEXT))
    assert [label for _, _, label in ruled] == ["RULE", "RULE"]
    not_overlapping = [t for t in tagged if all(t[1] <= r[0] or r[1] <= t[0] for r in ruled)]
    # each rule lies inside one of the tagger's spans; the tagger's other spans overlap none
    assert len(not_overlapping) == len(tagged) - 2 and not_overlapping

    for overwrite, expected in [(True, tagged), (False, sorted(ruled + not_overlapping))]:
        nlp = pipeline("entity_ruler", "ldnet_ner", overwrite_ents=overwrite)
        assert labelled(nlp(TEXT)) == expected, overwrite
        assert [labelled(doc) for doc in nlp.pipe([TEXT] * 3, batch_size=2)] == [expected] * 3
    # without earlier entities, keeping them changes nothing
    assert labelled(pipeline("ldnet_ner", overwrite_ents=False)(TEXT)) == tagged


def test_nlp_pipe_batch_size_is_the_components(fixture_exports):
    nlp = spacy.blank("en")
    config = {"model": str(fixture_exports["ner_ldnet_pruned"]), "threads": 1, "batch_size": 4}
    component = nlp.add_pipe("ldnet_ner", config=config)
    texts = [f"John Smith visited Zanzibar {i} times." for i in range(7)]
    expected = [labelled(nlp(text)) for text in texts]
    tagger = component.tagger
    calls = []

    def counted(inputs):
        calls.append(len(inputs))  # one sequence per doc: no sentence boundaries here
        return type(tagger).predict_batch_json(tagger, inputs)

    tagger.predict_batch_json = counted
    for kwargs, sizes in [
        ({"batch_size": 3}, [3, 3, 1]),
        ({"batch_size": 3, "component_cfg": {"ldnet_ner": {"batch_size": 2}}}, [2, 2, 2, 1]),
        ({}, [7]),  # nlp.batch_size (1000), as for any component
    ]:
        calls.clear()
        assert [labelled(doc) for doc in nlp.pipe(texts, **kwargs)] == expected
        assert calls == sizes, kwargs
    calls.clear()
    docs = [nlp.make_doc(text) for text in texts]
    assert [labelled(doc) for doc in component.pipe(docs)] == expected
    assert calls == [4, 3]  # called without a batch size: the component's own
    with pytest.raises(ValueError, match="batch_size must be a whole number >= 1, not 0"):
        list(component.pipe(docs, batch_size=0))


def test_n_process_2_tags_as_one_process(fixture_exports):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"model": str(fixture_exports["ner_ldnet_pruned"]), "labels": {"PER": "PERSON"}}
    nlp.add_pipe("ldnet_ner", config=config)
    texts = TEXTS * 3
    expected = [labelled(doc) for doc in nlp.pipe(texts)]
    assert [labelled(doc) for doc in nlp.pipe(texts, n_process=2, batch_size=2)] == expected
    # pickled without its onnxruntime session (worker processes under the spawn start method)
    again = pickle.loads(pickle.dumps(nlp))
    assert [labelled(doc) for doc in again.pipe(texts)] == expected
