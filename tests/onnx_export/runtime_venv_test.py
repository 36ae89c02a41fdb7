"""
The torch-free install: a fresh venv built as the README says, from
`requirements/runtime-lock.txt` and the `ldnet-runtime` distribution (`ldnet_runtime/
pyproject.toml`), pip using its cache (`benchmarks/studies/export.py`, which the
`export` study's `runtime_venv` stage measures). In it `import torch` (and AllenNLP, and
`ldnet_allennlp`) fails, and the fixtures' pruned export tags pre-tokenised and raw input as the
predictor does, through `Tagger`, the `ldnet-tag` console script and the spaCy component; and
from the repository's root, `ldnet-tag "..."` alone tags with the shipped runtime export of
ner_pruned (the README's two commands). Skipped, saying why, where pip reaches no package index.
About 30 s (most of it pip).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from benchmarks.studies.export import LOCK, build_runtime_venv, imports_torch
from ldnet_runtime import Tagger
from ldnet_runtime.tagging import mark_spans
from tests.conftest import PROJECT_ROOT
from tests.onnx_export.conftest import FIXTURE_ARCHIVES

TAG = """
import json, sys
import spacy
from ldnet_runtime import Tagger

outputs = Tagger(sys.argv[1], threads=1).predict_batch_json(json.loads(sys.argv[2]))
nlp = spacy.blank("en")
nlp.add_pipe("ldnet_ner", config={"model": sys.argv[1], "threads": 1})
doc = nlp("Chancellor Helmut Kohl met Jacques Chirac.")
ents = [(e.label_, e.start, e.end - 1) for e in doc.ents]
print(json.dumps({"outputs": outputs, "ents": ents}))
"""


def index_unreachable() -> str:
    """Why pip cannot install the lock here ('' where it can reach an index with onnxruntime)."""
    process = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "onnxruntime"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if process.returncode != 0:
        return f"pip reaches no package index with onnxruntime: {process.stderr.strip()[-300:]}"
    return ""


@pytest.fixture(scope="module")
def runtime_python(tmp_path_factory) -> Path:
    reason = index_unreachable()
    if reason:
        pytest.skip(reason)
    return build_runtime_venv(tmp_path_factory.mktemp("runtime_venv") / "venv")


def test_the_runtime_venv_has_no_torch_and_tags(runtime_python, fixture_exports, tmp_path):
    assert LOCK.is_file()
    assert not imports_torch(runtime_python)
    for module in ("allennlp", "ldnet_allennlp", "torch"):
        process = subprocess.run([str(runtime_python), "-c", f"import {module}"], cwd=tmp_path)
        assert process.returncode == 1, module

    export_dir = str(fixture_exports["ner_ldnet_pruned"])
    inputs = [
        {"tokens": ["John", "Smith", "visited", "Zanzibar", "."]},
        {"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday."},
    ]
    process = subprocess.run(
        [str(runtime_python), "-c", TAG, export_dir, json.dumps(inputs)],
        cwd=tmp_path,  # outside the repository: the installed package is imported
        capture_output=True,
        text=True,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    result = json.loads(process.stdout.splitlines()[-1])
    predictor = Predictor.from_archive(
        load_archive(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")), "ldnet_tagger"
    )
    assert result["outputs"] == predictor.predict_batch_json(inputs)
    spans = predictor.predict_json({"sentence": "Chancellor Helmut Kohl met Jacques Chirac."})
    assert result["ents"] == [[s["type"], s["start"], s["end"]] for s in spans["spans"]]

    ldnet_tag = runtime_python.parent / "ldnet-tag"
    sentence = "Peter Blackburn reported from Brussels ."
    process = subprocess.run(
        [str(ldnet_tag), "--model", export_dir, sentence],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stderr == ""
    output = predictor.predict_json({"sentence": sentence})
    assert process.stdout == mark_spans(output["tokens"], output["spans"]) + "\n"


def test_two_commands_install_the_runtime_and_tag_with_the_shipped_tagger(runtime_python, tmp_path):
    """The README's torch-free path from the repository's root: the venv (the first command,
    `runtime_python`), then `ldnet-tag "..."`, which tags with the shipped runtime export of
    ner_pruned (unpacked into the cache on first use)."""
    entries = json.loads((PROJECT_ROOT / "pretrained" / "MANIFEST.json").read_text())
    if "ner_pruned_runtime" not in entries:
        pytest.skip("pretrained/ has no ner_pruned_runtime (the shipped runtime export)")
    sentence = "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday."
    env = {"PATH": "/usr/bin:/bin", "LDNET_EXPORT_CACHE": str(tmp_path / "cache")}
    process = subprocess.run(
        [str(runtime_python.parent / "ldnet-tag"), sentence],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stderr == ""
    shipped = (
        tmp_path / "cache" / f"ner_pruned-runtime-{entries['ner_pruned_runtime']['sha256'][:12]}"
    )
    output = Tagger(shipped, threads=1).predict_json({"sentence": sentence})
    assert process.stdout == mark_spans(output["tokens"], output["spans"]) + "\n"
    assert [span["text"] for span in output["spans"]] == ["Helmut Kohl", "Jacques Chirac", "Bonn"]
