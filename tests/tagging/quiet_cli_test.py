"""
Quiet, fast command lines: `ldnet-tag "one sentence"` prints the tagged sentence and
nothing else, on stdout and stderr together; given a folder that `allennlp ldnet-export` wrote,
it tags without importing torch or AllenNLP; `ldnet-tag` and `ldnet-serve` default to the pruned
shipped tagger, the un-pruned one a flag away; a model that names no tagger is refused in one
line that says what to give.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_allennlp.serving.commands.ldnet_serve import model_of as served_model
from ldnet_allennlp.tagging.commands.ldnet_tag import tag_from_args
from ldnet_runtime.tagging import model_of, model_problem
from tests.conftest import FIXTURES_ROOT

BIN = Path(sys.executable).parent
SENTENCE = "Chancellor Helmut Kohl met Jacques Chirac in Bonn."
ENV = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1")
NO_HEAVY_IMPORTS = (
    "import sys; from ldnet_runtime.tag_command import main; main(sys.argv[1:]); "
    "loaded = [m for m in ('torch', 'allennlp', 'ldnet_allennlp') if sys.modules.get(m)]; "
    "sys.exit(f'imported {loaded}' if loaded else 0)"
)


def run(args, cwd):
    process = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True)
    assert process.returncode == 0, process.stderr[-3000:]
    return (process.stdout + process.stderr).splitlines()


def test_ldnet_tag_prints_the_tagged_sentence_and_nothing_else(tmp_path):
    # the shipped pruned tagger through AllenNLP: no INFO log, no NLTK download errors
    lines = run([str(BIN / "ldnet-tag"), SENTENCE], tmp_path)
    assert lines == ["Chancellor [Helmut Kohl]PER met [Jacques Chirac]PER in [Bonn]LOC ."]


def test_ldnet_tag_tags_an_export_without_torch_or_allennlp(tmp_path):
    export = tmp_path / "export"
    export_tagger(str(FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"), str(export))
    lines = run([str(BIN / "ldnet-tag"), "--model", str(export), SENTENCE, "Bonn ."], tmp_path)
    assert len(lines) == 2 and lines[1].replace("[", "").startswith("Bonn]")
    lines = run(
        [sys.executable, "-c", NO_HEAVY_IMPORTS, "--model", str(export), SENTENCE], tmp_path
    )
    assert len(lines) == 1 and lines[0].replace("[", "").startswith("Chancellor")


def test_the_pruned_tagger_is_the_default_and_the_full_one_a_flag_away():
    tag = argparse.Namespace(model=None, full=False)
    assert model_of(tag) == "ner_pruned"
    assert model_of(argparse.Namespace(model=None, full=True)) == "ner"
    assert model_of(argparse.Namespace(model="chunk")) == "chunk"
    with pytest.raises(ValueError, match="--full"):
        model_of(argparse.Namespace(model="chunk", full=True))
    assert served_model(argparse.Namespace(archive=None, full=False)) == "ner_pruned"
    assert served_model(argparse.Namespace(archive=None, full=True)) == "ner"
    assert served_model(argparse.Namespace(archive="x.tar.gz")) == "x.tar.gz"
    with pytest.raises(ConfigurationError, match="--full"):
        served_model(argparse.Namespace(archive="x.tar.gz", full=True))


@pytest.mark.parametrize(
    "model, message",
    [
        ("nonexistent", "'nonexistent' is no file or folder here and no shipped tagger"),
        ("lm_forward", "'lm_forward' is a shipped dense_language_model, not a tagger"),
        ("ner_pruned_runtime", "'ner_pruned_runtime' is a shipped runtime_export, not a tagger"),
        ("runs/no/model.tar.gz", "'runs/no/model.tar.gz' does not exist: give a tagger archive"),
    ],
)
def test_a_model_that_names_no_tagger_is_refused_in_one_line(model, message, tmp_path):
    assert message in model_problem(model)
    process = subprocess.run(
        [str(BIN / "ldnet-tag"), "--model", model, SENTENCE],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 1 and process.stdout == ""
    assert process.stderr.splitlines() == [f"ldnet-tag: {model_problem(model)}"]
    assert "['chunk', 'chunk_pruned', 'ner', 'ner_pruned']" in process.stderr or "/" in model
    with pytest.raises(ConfigurationError, match=message):
        tag_from_args(argparse.Namespace(model=model, sentences=[SENTENCE]))


def test_what_may_name_a_tagger_is_left_to_the_loaders(tmp_path):
    archive = FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"
    for model in ["ner", "ner_pruned", "chunk", str(archive), str(tmp_path), "https://x.org/m"]:
        assert model_problem(model) is None, model
