"""
`ldnet_runtime` in a fresh process where torch, AllenNLP and `ldnet_allennlp` cannot be
imported (a `sys.meta_path` finder refuses them, as in an install without them, and records
every attempt), from a folder outside the repository: it tags pre-tokenised input without even
trying to import them, raw sentences too (spaCy's thinc tries torch, finds it missing and goes
on), and `python -m ldnet_runtime` writes the lines `allennlp predict` writes.
"""

import json
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from tests.onnx_export.conftest import FIXTURE_ARCHIVES

BLOCKED = ("torch", "allennlp", "allennlp_models", "ldnet_allennlp")
BLOCKER = f"""
import sys
attempts = []

class RefuseHeavyImports:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}} (refused by the test)")
        return None

sys.meta_path.insert(0, RefuseHeavyImports())
"""
TAG = BLOCKER + """
import json
from ldnet_runtime import Tagger

outputs = Tagger(sys.argv[1], threads=1).predict_batch_json(json.loads(sys.argv[2]))
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r})
print(json.dumps({{"outputs": outputs, "attempts": attempts, "loaded": loaded}}))
""".format(blocked=BLOCKED)
CLI = BLOCKER + """
import runpy
sys.argv = ["ldnet_runtime"] + sys.argv[1:]
runpy.run_module("ldnet_runtime", run_name="__main__")
"""


def run_python(script: str, args: List[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script, *args], cwd=cwd, capture_output=True, text=True
    )


def tag_without_torch(export_dir, inputs: List[Dict[str, Any]], cwd) -> Dict[str, Any]:
    process = run_python(TAG, [str(export_dir), json.dumps(inputs)], cwd)
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def pruned_predictor() -> Predictor:
    return Predictor.from_archive(load_archive(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")))


def test_pre_tokenised_input_never_tries_torch_or_allennlp(fixture_exports, glove_tagger, tmp_path):
    inputs = [
        {"tokens": ["John", "Smith", "visited", "Zanzibar", "."]},
        {"tokens": ["Qqxzvw"]},
        {"tokens": []},
    ]
    for export_dir, archive in [
        (fixture_exports["ner_ldnet_pruned"], FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz"),
        (glove_tagger["export"], glove_tagger["archive"]),
    ]:
        result = tag_without_torch(export_dir, inputs, tmp_path)
        assert result["attempts"] == [] and result["loaded"] == []
        predictor = Predictor.from_archive(load_archive(str(archive)), "ldnet_tagger")
        assert result["outputs"] == predictor.predict_batch_json(inputs)


def test_raw_sentences_without_torch(fixture_exports, pruned_predictor, tmp_path):
    inputs = [{"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday."}]
    result = tag_without_torch(fixture_exports["ner_ldnet_pruned"], inputs, tmp_path)
    assert result["loaded"] == []
    assert all(name.split(".")[0] == "torch" for name in result["attempts"])  # thinc's, optional
    assert result["outputs"] == pruned_predictor.predict_batch_json(inputs)


def test_the_command_line_writes_allennlp_predicts_lines(
    fixture_exports, pruned_predictor, tmp_path
):
    inputs = [
        {"tokens": ["EU", "rejects", "German", "call", "."]},
        {"sentence": "Peter Blackburn reported from Brussels."},
        {"tokens": []},
    ]
    input_file = tmp_path / "input.jsonl"
    input_file.write_text(
        "\n".join(json.dumps(x) for x in inputs[:2]) + "\n\n" + json.dumps(inputs[2])
    )
    output_file = tmp_path / "output.jsonl"
    export_dir = str(fixture_exports["ner_ldnet_pruned"])
    args = [export_dir, str(input_file), "--output-file", str(output_file), "--batch-size", "2"]
    process = run_python(CLI, args, tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    expected = [pruned_predictor.dump_line(pruned_predictor.predict_json(x)) for x in inputs]
    assert output_file.read_text().splitlines(keepends=True) == expected

    input_file.write_text(json.dumps(inputs[0]) + "\n\n{not json\n")
    process = run_python(CLI, [export_dir, str(input_file)], tmp_path)
    assert process.returncode == 1
    assert f"ldnet_runtime: {input_file}:3: not valid JSON" in process.stderr
