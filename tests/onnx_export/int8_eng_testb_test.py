"""
The default export (`allennlp ldnet-export`, int8) of the shipped pruned NER tagger
(`ner_pruned`) against its AllenNLP archive on the whole of CoNLL-03 eng.testb: test F1 lost
(at most `MAX_F1_LOSS`) and the share of tokens whose tag it keeps (at least
`MIN_TAG_AGREEMENT`), both printed; and the same sentences tagged one at a time. int8 activations
are quantised with one scale per graph run (onnxruntime's dynamic quantisation), so a sentence's
int8 emissions depend a little on the sentences run with it: alone, its tags may differ from
those it gets in a batch, here on at most `MAX_BATCH_DISAGREEMENT` of the tokens (printed; the
fp32 export's do not differ, `runtime_batching_test.py`), and the F1 loss holds at batch 1
too. Skipped, saying why, where the test file or the shipped
tagger is not here (`LDNET_SHARED_DATA` names the shared data folder, default `../shared/data`).
"""

import argparse
import os
from pathlib import Path

import pytest

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from benchmarks.harness.data import read_conll
from benchmarks.harness.taggers import span_f1
from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args
from ldnet_allennlp.pretrained import manifest, pretrained_dir
from ldnet_runtime import Tagger

DATA = Path(
    os.environ.get("LDNET_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
)
TEST_FILE = DATA / "conll2003" / "eng.testb"
BATCH_SIZE = 32
MAX_F1_LOSS = 0.1  # test F1 points
MIN_TAG_AGREEMENT = 0.999  # the int8 export's tags equal to AllenNLP's
MAX_BATCH_DISAGREEMENT = 0.001  # tokens tagged otherwise alone than in batches of BATCH_SIZE


def shipped_tagger(name: str) -> Path:
    entry = manifest().get(name)
    if entry is None:
        pytest.skip(f"pretrained/MANIFEST.json has no {name!r} entry")
    path = pretrained_dir() / entry["file"]
    if not path.exists():
        pytest.skip(f"the shipped tagger {path} is not here")
    return path


def tag_all(predict, sentences):
    tags = []
    for start in range(0, len(sentences), BATCH_SIZE):
        batch = [{"tokens": words} for words in sentences[start : start + BATCH_SIZE]]
        tags += [output["tags"] for output in predict(batch)]
    return tags


def test_the_default_int8_export_keeps_eng_testb_f1(tmp_path, one_torch_thread, capsys):
    if not TEST_FILE.exists():
        pytest.skip(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    archive_file = shipped_tagger("ner_pruned")
    export_from_args(argparse.Namespace(archive_file=str(archive_file), output_dir=str(tmp_path)))
    runtime = Tagger(tmp_path, threads=1)
    assert runtime.int8 is not None  # the default export is the int8 one
    gold = read_conll(TEST_FILE)
    sentences = [words for words, _ in gold]
    assert len(sentences) == 3453  # CoNLL-03 eng.testb's sentences
    predictor = Predictor.from_archive(load_archive(str(archive_file)), "ldnet_tagger")
    expected = tag_all(predictor.predict_batch_json, sentences)
    actual = tag_all(runtime.predict_batch_json, sentences)
    gold_tags = [tags for _, tags in gold]
    f1_allennlp = span_f1(gold_tags, expected, runtime.label_encoding)
    f1_int8 = span_f1(gold_tags, actual, runtime.label_encoding)
    pairs = [(a, e) for s, t in zip(actual, expected) for a, e in zip(s, t)]
    differ = sum(a != e for a, e in pairs)
    agreement = 1 - differ / len(pairs)
    with capsys.disabled():
        print(
            f"\neng.testb F1: AllenNLP {f1_allennlp:.2f}, int8 export {f1_int8:.2f} (loss "
            f"{f1_allennlp - f1_int8:.3f}); tag agreement {agreement:.4%} ({differ} of "
            f"{len(pairs)} tokens differ)"
        )
    assert f1_allennlp - f1_int8 <= MAX_F1_LOSS
    assert agreement >= MIN_TAG_AGREEMENT
    alone = [runtime.predict_json({"tokens": words})["tags"] for words in sentences]
    f1_alone = span_f1(gold_tags, alone, runtime.label_encoding)
    moved = sum(a != b for s, t in zip(alone, actual) for a, b in zip(s, t))
    moved_sentences = sum(s != t for s, t in zip(alone, actual))
    with capsys.disabled():
        print(
            f"int8 export one sentence at a time: F1 {f1_alone:.2f}; {moved} tokens of "
            f"{moved_sentences} sentences tagged otherwise than in batches of {BATCH_SIZE}"
        )
    assert f1_allennlp - f1_alone <= MAX_F1_LOSS
    assert moved / len(pairs) <= MAX_BATCH_DISAGREEMENT
