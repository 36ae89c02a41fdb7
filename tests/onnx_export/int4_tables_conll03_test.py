"""
`--int4-tables` on the shipped pruned NER tagger (`ner_pruned`), against its fp32 export (whose
tags are AllenNLP's), on CoNLL-03:

- the choice, on dev (eng.testa): F1 and tag agreement with the fp32 export of the int8 export
  (int8 tables), of the int8 export with the LM's table alone at 4 bits, and of the
  `--int4-tables` export (every table at 4 bits), printed; every table goes to 4 bits because
  that keeps the dev F1 within `MAX_F1_LOSS` of the fp32 export's;
- the gate, on test (eng.testb): the `--int4-tables` export loses at most `MAX_F1_LOSS` test F1
  and keeps at least `MIN_TAG_AGREEMENT` of the tags; its size packed as `pretrained/` ships a
  runtime export (`pack_export`, xz) is printed beside the default export's.

Skipped, saying why, where the data or the shipped tagger is not here (`LDNET_SHARED_DATA` names
the shared data folder, default `../shared/data`).
"""

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.harness.data import read_conll
from benchmarks.harness.taggers import span_f1
from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args
from ldnet_runtime import Tagger
from ldnet_runtime.shipped_exports import pack_export
from tests.onnx_export.int8_eng_testb_test import DATA, shipped_tagger, tag_all

DEV_FILE = DATA / "conll2003" / "eng.testa"
TEST_FILE = DATA / "conll2003" / "eng.testb"
MAX_F1_LOSS = 0.1  # F1 points, against the fp32 export
# the int4 export's tags equal to the fp32 export's (measured 99.93% on dev, 99.91% on test)
MIN_TAG_AGREEMENT = 0.998
MAX_PACKED_BYTES = 12_000_000  # the size goal of the shipped runtime export
LM_TABLE = "lm"  # the shipped tagger's LM input (layer_selection): its table is the largest


@pytest.fixture(scope="module")
def exports(tmp_path_factory, one_thread_session):
    """fp32, int8 (the default), int4 (`--int4-tables`) exports of `ner_pruned`, and `lm_int4`:
    the int8 export with the LM's table taken from the int4 one."""
    archive = str(shipped_tagger("ner_pruned"))
    folder = tmp_path_factory.mktemp("int4_conll03")
    for name, settings in (("fp32", {"fp32": True}), ("int8", {}), ("int4", {"int4_tables": True})):
        args = argparse.Namespace(archive_file=archive, output_dir=str(folder / name), **settings)
        export_from_args(args)
    shutil.copytree(folder / "int8", folder / "lm_int4")
    with np.load(folder / "int8" / "word_tables.npz") as int8, np.load(
        folder / "int4" / "word_tables.npz"
    ) as int4:
        tables = {name: int8[name] for name in int8.files}
        for name in (LM_TABLE, LM_TABLE + ".scale"):
            tables[name] = int4[name]
    np.savez(folder / "lm_int4" / "word_tables.npz", **tables)
    tagger = json.loads((folder / "int4" / "tagger.json").read_text())
    for name, table in tagger["word_tables"]["tables"].items():
        table["dtype"] = "int4" if name == LM_TABLE else "int8"
    (folder / "lm_int4" / "tagger.json").write_text(json.dumps(tagger))
    return folder


def compare(export_dir: Path, reference, gold):
    """(F1, tag agreement with `reference`, tokens that differ) of the export on `gold`."""
    runtime = Tagger(export_dir, threads=1)
    tags = tag_all(runtime.predict_batch_json, [words for words, _ in gold])
    pairs = [(a, b) for ours, theirs in zip(tags, reference) for a, b in zip(ours, theirs)]
    differ = sum(a != b for a, b in pairs)
    f1 = span_f1([gold_tags for _, gold_tags in gold], tags, runtime.label_encoding)
    return f1, 1 - differ / len(pairs), differ


def fp32_reference(exports, gold):
    """The fp32 export's tags of `gold`'s sentences (AllenNLP's) and their F1."""
    fp32 = Tagger(exports / "fp32", threads=1)
    reference = tag_all(fp32.predict_batch_json, [words for words, _ in gold])
    return reference, span_f1([tags for _, tags in gold], reference, fp32.label_encoding)


def test_the_tables_at_4_bits_are_chosen_on_dev(exports, capsys):
    if not DEV_FILE.exists():
        pytest.skip(f"{DEV_FILE} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    gold = read_conll(DEV_FILE)
    assert len(gold) == 3250  # CoNLL-03 eng.testa's sentences
    reference, f1_fp32 = fp32_reference(exports, gold)
    results = {name: compare(exports / name, reference, gold) for name in ("int8", "lm_int4")}
    results["int4"] = compare(exports / "int4", reference, gold)
    with capsys.disabled():
        print(f"\neng.testa F1: fp32 export {f1_fp32:.2f}")
        for name, (f1, agreement, differ) in results.items():
            print(
                f"  {name}: F1 {f1:.2f} (loss {f1_fp32 - f1:.3f}), tag agreement with fp32 "
                f"{agreement:.4%} ({differ} tokens differ)"
            )
    f1_int4, agreement_int4, _ = results["int4"]
    assert f1_fp32 - f1_int4 <= MAX_F1_LOSS
    assert agreement_int4 >= MIN_TAG_AGREEMENT


def test_the_int4_export_keeps_eng_testb_f1(exports, tmp_path, capsys):
    if not TEST_FILE.exists():
        pytest.skip(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA to the shared data folder)")
    gold = read_conll(TEST_FILE)
    assert len(gold) == 3453  # CoNLL-03 eng.testb's sentences
    reference, f1_fp32 = fp32_reference(exports, gold)
    f1_int4, agreement, differ = compare(exports / "int4", reference, gold)
    sizes = {}
    for name in ("int8", "int4"):
        pack_export(exports / name, tmp_path / f"{name}.tar.xz")
        sizes[name] = (tmp_path / f"{name}.tar.xz").stat().st_size
    with capsys.disabled():
        print(
            f"\neng.testb F1: fp32 export {f1_fp32:.2f}, int4 tables {f1_int4:.2f} (loss "
            f"{f1_fp32 - f1_int4:.3f}); tag agreement {agreement:.4%} ({differ} tokens differ); "
            f"packed (xz): default export {sizes['int8']:,} bytes, --int4-tables "
            f"{sizes['int4']:,} bytes"
        )
    assert f1_fp32 - f1_int4 <= MAX_F1_LOSS
    assert agreement >= MIN_TAG_AGREEMENT
    assert sizes["int4"] <= MAX_PACKED_BYTES < sizes["int8"]
