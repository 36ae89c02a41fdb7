"""
`allennlp ldnet-export --int8`: the graph's `MatMul` and `LSTM` weights quantised to int8 by
onnxruntime's `quantize_dynamic`, checked against the fp32 graph before anything is written; an
export whose int8 tags differ beyond `--int8-tolerance` is refused with the measured agreement
and leaves no folder.
"""

import argparse
import json

import numpy as np
import onnx
import pytest
from allennlp.common.checks import ConfigurationError
from onnx import numpy_helper

from ldnet_allennlp.onnx_export import exporter
from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args, read_conll_tokens
from ldnet_runtime import Tagger
from tests.conftest import FIXTURES_ROOT
from tests.onnx_export.conftest import FIXTURE_ARCHIVES

ARCHIVE = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
CONLL = FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"


def test_an_int8_export_of_a_fixture_tagger_is_checked_and_written(tmp_path, capsys):
    output_dir = tmp_path / "int8"
    export_from_args(
        argparse.Namespace(
            archive_file=ARCHIVE,
            output_dir=str(output_dir),
            int8=True,
            int8_tolerance=0.0,
            int8_check_file=str(CONLL),
        )
    )
    printed = capsys.readouterr().out
    assert "tag agreement 100.0000%" in printed and f"wrote {output_dir}" in printed
    graph = onnx.load(str(output_dir / "model.onnx"))
    op_types = {node.op_type for node in graph.graph.node}
    assert {"DynamicQuantizeLSTM", "MatMulInteger"} <= op_types and "LSTM" not in op_types
    int8 = json.loads((output_dir / "tagger.json").read_text())["int8"]
    sentences = read_conll_tokens(str(CONLL))
    assert int8["op_types"] == ["MatMul", "LSTM"] and int8["weight_type"] == "QInt8"
    assert int8["check"]["sentences"] == len(sentences)
    assert int8["check"]["tokens"] == sum(map(len, sentences))
    assert int8["check"]["tag_agreement"] == 1.0 and int8["check"]["tolerance"] == 0.0
    tagged = Tagger(output_dir, threads=1).predict_json({"tokens": sentences[0]})
    assert len(tagged["tags"]) == len(sentences[0])
    assert list(tmp_path.iterdir()) == [output_dir]  # no partial folder, no fp32 graph left


def corrupting_quantizer(fp32_graph, int8_graph):
    """A "quantiser" that writes the fp32 graph with its large weights scrambled."""
    model = onnx.load(str(fp32_graph))
    generator = np.random.default_rng(0)
    for initializer in model.graph.initializer:
        weights = numpy_helper.to_array(initializer)
        if weights.dtype == np.float32 and weights.size > 100:
            noisy = generator.normal(0, 3, weights.shape).astype(np.float32)
            initializer.CopyFrom(numpy_helper.from_array(noisy, initializer.name))
    onnx.save(model, str(int8_graph))


def test_an_int8_export_whose_tags_disagree_is_refused_and_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(exporter, "quantize_dynamic_int8", corrupting_quantizer)
    output_dir = tmp_path / "int8"
    with pytest.raises(ConfigurationError, match=r"tag agreement \d+\.\d+%") as error:
        exporter.export_tagger(ARCHIVE, str(output_dir), int8=True, int8_tolerance=0.01)
    assert "more than the tolerance 1.0000%" in str(error.value)
    assert "Nothing was written" in str(error.value)
    assert not output_dir.exists() and list(tmp_path.iterdir()) == []


def test_a_tolerance_outside_zero_to_one_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="from 0 to 1"):
        exporter.export_tagger(ARCHIVE, str(tmp_path / "x"), int8=True, int8_tolerance=5)
    assert list(tmp_path.iterdir()) == []


def test_read_conll_tokens(tmp_path):
    conll = tmp_path / "x.conll"
    conll.write_text("-DOCSTART- -X- O O\n\nEU NNP I-ORG\nrejects VBZ O\n\n\nBonn NNP I-LOC\n")
    assert read_conll_tokens(str(conll)) == [["EU", "rejects"], ["Bonn"]]
