"""
The models shipped in `pretrained/`: the manifest describes the files that are there (size,
sha256), the whole folder stays within its budget, the taggers tag new sentences, work from any
directory with no other file, and, where the real test sets are present, score the test F1 their
manifest entry gives (so CI checks the shipped models' quality on every change).
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate
from allennlp.data.data_loaders import SimpleDataLoader

from ldnet_allennlp import load_pretrained
from ldnet_allennlp.pretrained import manifest, pretrained_dir

DATA = Path(
    os.environ.get("LDNET_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
TEST_FILES = {
    "ner": DATA / "conll2003" / "eng.testb",
    "chunk": DATA / "conll2000" / "test.txt",
}
BUDGET_BYTES = 80 * 1024 * 1024
ENTRIES = manifest()
TAGGERS = sorted(name for name, entry in ENTRIES.items() if entry["kind"] == "tagger")


def test_the_manifest_describes_every_file_and_the_folder_is_within_budget():
    folder = pretrained_dir()
    shipped = {path.name for path in folder.iterdir() if path.is_file()} - {"MANIFEST.json"}
    assert shipped == {entry["file"] for entry in ENTRIES.values()}
    for name, entry in ENTRIES.items():
        path = folder / entry["file"]
        assert path.stat().st_size == entry["size_bytes"], name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], name
    assert {path.name for path in folder.iterdir() if path.is_dir()} <= {"teachers"}
    assert sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) <= BUDGET_BYTES


def test_the_teachers_record_describes_every_teacher_archive():
    # pretrained/teachers/: the extra teacher taggers of scripts/train_teacher.sh
    folder = pretrained_dir() / "teachers"
    if not folder.exists():
        pytest.skip("no teacher archives shipped")
    records = json.loads((folder / "teachers.json").read_text())
    archives = {path.name for path in folder.glob("*.tar.gz")}
    assert archives == {record["file"] for record in records.values()}
    for name, record in records.items():
        path = folder / record["file"]
        assert path.stat().st_size == record["size_bytes"], name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == record["sha256"], name
        assert record["test_file_read_at_training"] is False, name


def test_a_shipped_ner_tagger_exists():
    assert "ner" in TAGGERS, "pretrained/MANIFEST.json lists no NER tagger"


def spans(prediction):
    return [(span["text"], span["type"]) for span in prediction["spans"]]


def test_the_ner_tagger_finds_the_entities_of_new_sentences():
    # none of these sentences is in CoNLL-03's files
    ner = load_pretrained("ner")
    kohl = ner.predict_json({"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn."})
    assert spans(kohl) == [
        ("Helmut Kohl", "PER"),
        ("Jacques Chirac", "PER"),
        ("Bonn", "LOC"),
    ]
    outputs = ner.predict_batch_json(
        [{"tokens": []}, {"sentence": "Maria Lopez said Reuters visited Lake Geneva on Monday."}]
    )
    assert outputs[0] == {"tokens": [], "tags": [], "spans": []}
    assert ("Maria Lopez", "PER") in spans(outputs[1]) and ("Reuters", "ORG") in spans(outputs[1])


def test_a_shipped_chunker_exists():
    assert "chunk" in TAGGERS, "pretrained/MANIFEST.json lists no chunker"


@pytest.mark.parametrize("name", TAGGERS)
def test_the_tagger_refers_to_the_shipped_lms(name):
    config = load_archive(str(pretrained_dir() / ENTRIES[name]["file"])).config
    lm = config["model"]["text_field_embedder"]["token_embedders"]["lm"].as_dict(quiet=True)
    # the frozen LM weights are read from the shipped LMs (checked by their sha256), not copied
    assert lm["store_lm_weights"] is False
    assert (lm["forward_lm_archive"], lm["backward_lm_archive"]) == (
        "pretrained:lm_forward",
        "pretrained:lm_backward",
    )


def test_the_chunker_chunks_new_sentences():
    chunk = load_pretrained("chunk")
    fox = chunk.predict_json({"sentence": "The quick brown fox jumped over the lazy dog."})
    assert spans(fox) == [
        ("The quick brown fox", "NP"),
        ("jumped", "VP"),
        ("over", "PP"),
        ("the lazy dog", "NP"),
    ]
    shares = chunk.predict_json(
        {"sentence": "Shares of the new company rose sharply in early trading on Tuesday."}
    )
    assert spans(shares)[:5] == [
        ("Shares", "NP"),
        ("of", "PP"),
        ("the new company", "NP"),
        ("rose", "VP"),
        ("sharply", "ADVP"),
    ]


@pytest.mark.parametrize("name", TAGGERS)
def test_the_shipped_tagger_predicts_from_any_directory_with_no_other_file(name, tmp_path):
    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"sentence": "Helmut Kohl visited Bonn ."}) + "\n")
    archive = pretrained_dir() / ENTRIES[name]["file"]
    command = [str(Path(sys.executable).with_name("allennlp")), "predict", str(archive)]
    command += [str(inputs), "--output-file", str(tmp_path / "out.jsonl"), "--silent"]
    command += ["--include-package", "ldnet_allennlp"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    # an empty working directory: the LM archives named in the tagger's config are not there
    process = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert process.returncode == 0, process.stderr[-2000:]
    (output,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert output["tokens"] == ["Helmut", "Kohl", "visited", "Bonn", "."]
    assert len(output["tags"]) == 5


@pytest.mark.parametrize("name", TAGGERS)
def test_the_shipped_tagger_scores_its_manifest_test_f1(name):
    entry = ENTRIES[name]
    test_file = TEST_FILES[entry["task"]]
    if not test_file.exists():
        pytest.skip(f"{test_file} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    archive = load_archive(str(pretrained_dir() / entry["file"]))
    reader = archive.validation_dataset_reader
    instances = list(reader.read(str(test_file)))
    loader = SimpleDataLoader(instances, batch_size=64)
    loader.index_with(archive.model.vocab)
    metrics = evaluate(archive.model, loader)
    assert 100.0 * metrics["f1-measure-overall"] == pytest.approx(entry["test_f1"], abs=0.05)


@pytest.mark.parametrize("name", ["ner", "ner_pruned"])
def test_the_ner_taggers_vocabulary_is_the_training_files(name):
    """The NER configs named eng.testb as `test_data_path` when these taggers were trained, but
    built their vocabulary from eng.train alone (`datasets_for_vocab_creation`): no word, no
    character and no tag comes from a dev or test file."""
    train = DATA / "conll2003" / "eng.train"
    if not train.exists():
        pytest.skip(f"{train} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    words, characters, tags = set(), set(), set()
    for line in train.read_text().splitlines():
        columns = line.split()
        if len(columns) == 4 and columns[0] != "-DOCSTART-":
            words.add(columns[0].lower())
            characters.update(columns[0])
            tags.add(columns[3])
    vocab = load_archive(str(pretrained_dir() / manifest()[name]["file"])).model.vocab
    assert (
        set(vocab.get_token_to_index_vocabulary("tokens")) - {"@@PADDING@@", "@@UNKNOWN@@"} <= words
    )
    assert (
        set(vocab.get_token_to_index_vocabulary("token_characters"))
        - {
            "@@PADDING@@",
            "@@UNKNOWN@@",
        }
        <= characters
    )
    types = {tag.split("-")[-1] for tag in tags}
    assert {t.split("-")[-1] for t in vocab.get_token_to_index_vocabulary("labels")} <= types
