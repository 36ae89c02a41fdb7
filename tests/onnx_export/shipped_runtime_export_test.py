"""
The shipped runtime export of `ner_pruned` (`pretrained/MANIFEST.json`'s `ner_pruned_runtime`):
found by the tagger's name with no export step, unpacked into the runtime's cache after its
sha256 is checked, within its size, and tagging exactly as a fresh `allennlp ldnet-export` of
the shipped archive with the form it was written in does (`SHIPPED_FORM`: the LMs' sentence
boundaries as positions of their input; all of CoNLL-03 eng.testb where `../shared/data` has
it, else the fixtures' sentences). Skipped, saying why, where the shipped files are not here.
"""

import argparse
import os
import tarfile
from pathlib import Path

import pytest

from benchmarks.studies.export_speed import read_conll
from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args
from ldnet_allennlp.pretrained import manifest, pretrained_dir
from ldnet_runtime import Tagger
from ldnet_runtime.shipped_exports import export_dir_of, shipped_runtime_export, unpack_export
from tests.conftest import FIXTURES_ROOT

DATA = Path(
    os.environ.get("LDNET_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
)
TEST_FILE = DATA / "conll2003" / "eng.testb"
MAX_MB = 16.0  # the shipped file's size (MB); the 12 MB aimed for is not reached
# the exporter's options that give the shipped export's form: its LMs read their sentence
# boundaries as positions of their input (`--lm-boundary-positions`)
SHIPPED_FORM = {"lm_boundary_positions": True}


def shipped_entry():
    entry = manifest().get("ner_pruned_runtime")
    if entry is None or not (pretrained_dir() / entry["file"]).is_file():
        pytest.skip("pretrained/ has no ner_pruned_runtime (the shipped runtime export)")
    if not (pretrained_dir() / manifest()["ner_pruned"]["file"]).is_file():
        pytest.skip("the shipped ner_pruned archive is not here")
    return entry


def tags(tagger: Tagger, sentences):
    found = []
    for first in range(0, len(sentences), 32):
        found += tagger.tag_tokens(sentences[first : first + 32])
    return found


def test_the_shipped_export_tags_as_a_fresh_export(tmp_path, monkeypatch):
    entry = shipped_entry()
    assert entry["kind"] == "runtime_export" and entry["of"] == "ner_pruned"
    assert entry["size_bytes"] / 1e6 <= MAX_MB
    monkeypatch.setenv("LDNET_EXPORT_CACHE", str(tmp_path / "cache"))
    shipped = export_dir_of("ner_pruned")  # no export step: the shipped file, unpacked
    assert shipped == tmp_path / "cache" / f"ner_pruned-runtime-{entry['sha256'][:12]}"
    assert shipped_runtime_export("ner_pruned") == shipped
    assert Tagger("ner_pruned", threads=1).export_dir == shipped  # by name
    fresh = tmp_path / "fresh"
    export_from_args(
        argparse.Namespace(
            archive_file="pretrained:ner_pruned", output_dir=str(fresh), **SHIPPED_FORM
        )
    )
    assert sorted(p.name for p in shipped.iterdir()) == sorted(p.name for p in fresh.iterdir())
    if TEST_FILE.exists():
        sentences = [words for words, _ in read_conll(TEST_FILE)]
    else:
        sentences = [
            words for words, _ in read_conll(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
        ]
    sentences.append(["Zxqwvblorf", "met", "Ulaanbaatar-based", "Blorfington", "."])
    assert tags(Tagger(shipped, threads=1), sentences) == tags(Tagger(fresh, threads=1), sentences)


def test_a_damaged_shipped_file_is_refused(tmp_path, monkeypatch):
    entry = shipped_entry()
    folder = tmp_path / "pretrained"
    folder.mkdir()
    (folder / "MANIFEST.json").write_text((pretrained_dir() / "MANIFEST.json").read_text())
    (folder / entry["file"]).write_bytes(b"not the shipped file")
    monkeypatch.setenv("LDNET_PRETRAINED_DIR", str(folder))
    monkeypatch.setenv("LDNET_EXPORT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError, match="a damaged or replaced file"):
        shipped_runtime_export("ner_pruned")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_unpacking_takes_plain_top_level_files_only(tmp_path):
    archive = tmp_path / "bad.tar.xz"
    (tmp_path / "evil.txt").write_text("x")
    with tarfile.open(archive, "w:xz") as packed:
        packed.add(tmp_path / "evil.txt", arcname="../evil.txt")
    with pytest.raises(RuntimeError, match="not a plain file at the top level"):
        unpack_export(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []
