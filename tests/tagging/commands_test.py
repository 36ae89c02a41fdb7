"""`allennlp ldnet-tag`: spans marked in the printed sentence."""

import argparse
import io
import json

import pytest

from ldnet_allennlp.tagging.commands.ldnet_tag import tag_from_args
from ldnet_runtime.tagging import mark_spans, sentences_of
from tests.conftest import FIXTURES_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"


def test_mark_spans_by_hand():
    tokens = ["Chancellor", "Helmut", "Kohl", "met", "Chirac", "in", "Bonn", "."]
    spans = [
        {"type": "PER", "start": 1, "end": 2},
        {"type": "PER", "start": 4, "end": 4},
        {"type": "LOC", "start": 6, "end": 6},
    ]
    assert mark_spans(tokens, spans) == (
        "Chancellor [Helmut Kohl]PER met [Chirac]PER in [Bonn]LOC ."
    )
    assert mark_spans(["no", "spans"], []) == "no spans"


def test_ldnet_tag_prints_what_the_archive_predicts(capsys, monkeypatch):
    # a tagger archive by path (the recorded predictions of a fixture archive), sentences
    # from the command line, then from stdin
    expected = json.loads((FIXTURE_ARCHIVES / "expected_predictions.json").read_text())
    output = expected["archives"]["ner_ldnet_pruned"]["outputs"][0]["predictor"]
    sentence = " ".join(output["tokens"])
    archive = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    tag_from_args(argparse.Namespace(model=archive, sentences=[sentence]))
    printed = capsys.readouterr().out.splitlines()
    assert printed == [mark_spans(output["tokens"], output["spans"])]
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{sentence}\n\n{sentence}\n"))
    tag_from_args(argparse.Namespace(model=archive, sentences=[]))
    assert capsys.readouterr().out.splitlines() == printed * 2


def test_sentences_that_are_not_utf8_are_named(monkeypatch):
    """Python reads a byte that is not UTF-8 (here 0xFF) from stdin or argv as U+DCFF."""
    assert sentences_of(argparse.Namespace(sentences=["Kohl met Chirac"])) == ["Kohl met Chirac"]
    with pytest.raises(ValueError, match=r"^argument 2 is not UTF-8 text: character 5 is U\+DCFF"):
        sentences_of(argparse.Namespace(sentences=["Kohl met", "Bonn \udcff"]))
    monkeypatch.setattr("sys.stdin", io.StringIO("Kohl met\n\n Bonn \udcff\n"))
    with pytest.raises(ValueError, match=r"^line 3 of standard input is not UTF-8 text: charac"):
        sentences_of(argparse.Namespace(sentences=[]))
    monkeypatch.setattr("sys.stdin", io.StringIO("Kohl met\n\n Bonn\n"))
    assert sentences_of(argparse.Namespace(sentences=[])) == ["Kohl met", "Bonn"]
