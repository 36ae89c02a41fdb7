"""
`ldnet_allennlp.patches.safe_archive_extraction`: AllenNLP's `load_archive` (and everything on
`extracted_archive`) and cached_path's archive extraction refuse archives with a member that
could write outside, a device file or FIFO, or too many bytes, before writing anything, and
leave no temporary directory behind; benign archives still load. Every loading path of the
package (CLI included) is in `tests/archive_safety_test.py`.
"""

import io
import pickle
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.models.archival import load_archive
from allennlp.nn.initializers import PretrainedModelInitializer

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel
from ldnet_allennlp.patches import safe_archive_extraction
from ldnet_allennlp.patches.safe_archive_extraction import (
    DEFAULT_MAX_ARCHIVE_BYTES,
    MAX_ARCHIVE_BYTES_VARIABLE,
    UnsafeArchiveError,
    extract_archive_safely,
    max_archive_bytes,
)
from tests.crafted_archives import (
    ATTACKS,
    LM_ARCHIVES,
    VICTIM,
    VICTIM_TEXT,
    craft_archive,
    oversize_limit,
    snapshot,
)

BASE = LM_ARCHIVES["forward"]  # the smallest fixture archive (a tiny dense LM)


@pytest.fixture
def temp_root(tmp_path, monkeypatch) -> Path:
    """Python's temporary directory for this test only, so that a leftover one shows."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def outside(tmp_path) -> Path:
    """The directory the crafted archives aim at, outside every temporary directory."""
    directory = tmp_path / "outside"
    directory.mkdir()
    return directory


def evil_archive(tmp_path: Path, attack: str, outside: Path, monkeypatch, base: Path = BASE):
    """`(path, offending member)` of `base` plus `attack`; the size limit set for `oversized`."""
    path = tmp_path / f"{attack}.tar.gz"
    member = craft_archive(base, path, attack, outside)
    if attack == "oversized":
        monkeypatch.setenv(MAX_ARCHIVE_BYTES_VARIABLE, oversize_limit(base))
    return str(path), member


def assert_refused(error: pytest.ExceptionInfo, archive: str, member: str) -> None:
    assert isinstance(error.value, ConfigurationError)
    message = str(error.value)
    assert message.startswith(f"Refusing to extract the archive {archive}: ")
    assert repr(member) in message


def assert_untouched(outside: Path, before: dict) -> None:
    assert snapshot(outside) == before
    if (outside / VICTIM).exists():
        assert (outside / VICTIM).read_text() == VICTIM_TEXT


@pytest.mark.parametrize("attack", ["traversal", "absolute", "symlink", "hardlink"])
def test_the_crafted_archives_write_outside_with_allennlps_own_extraction(
    attack, tmp_path, outside, temp_root, monkeypatch
):
    # what the patch prevents: these really escape AllenNLP's extraction
    archive, _ = evil_archive(tmp_path, attack, outside, monkeypatch)
    before = snapshot(outside)
    with safe_archive_extraction.ALLENNLP_EXTRACTED_ARCHIVE(archive):
        pass
    assert snapshot(outside) != before


@pytest.mark.parametrize("attack", ATTACKS)
def test_load_archive_refuses_each_attack_before_writing(
    attack, tmp_path, outside, temp_root, monkeypatch
):
    archive, member = evil_archive(tmp_path, attack, outside, monkeypatch)
    before = snapshot(outside)
    with pytest.raises(UnsafeArchiveError) as error:
        load_archive(archive)
    assert_refused(error, archive, member)
    assert "Nothing was extracted." in str(error.value)
    assert_untouched(outside, before)
    assert list(temp_root.iterdir()) == []  # AllenNLP's own extracted_archive leaked it


@pytest.mark.parametrize("attack", ATTACKS)
def test_cached_path_extraction_refuses_each_attack(
    attack, tmp_path, outside, temp_root, monkeypatch
):
    archive, member = evil_archive(tmp_path, attack, outside, monkeypatch)
    cache = tmp_path / "cache"
    before = snapshot(outside)
    with pytest.raises(UnsafeArchiveError) as error:
        cached_path(archive, cache_dir=str(cache), extract_archive=True)
    assert_refused(error, archive, member)
    assert_untouched(outside, before)
    assert [path.name for path in cache.iterdir() if path.is_dir()] == []  # no extraction left
    assert list(temp_root.iterdir()) == []


def test_a_benign_archive_still_loads_and_extracts(tmp_path, temp_root):
    archive = tmp_path / "lm_forward.tar.gz"
    shutil.copy(BASE, archive)
    assert isinstance(load_archive(str(archive)).model, DenseLanguageModel)
    extracted = Path(
        cached_path(str(archive), cache_dir=str(tmp_path / "cache"), extract_archive=True)
    )
    with tarfile.open(BASE) as original:
        assert sorted(snapshot(extracted)) == sorted(member.name for member in original)
    assert list(temp_root.iterdir()) == []


def test_a_truncated_archive_fails_as_before_and_leaves_no_temporary_directory(tmp_path, temp_root):
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(BASE.read_bytes()[:1500])
    with pytest.raises(EOFError):  # `load_dense_lm` and `prune_archive` name the archive
        load_archive(str(truncated))
    assert list(temp_root.iterdir()) == []  # AllenNLP's own extracted_archive leaked it


def test_names_with_dot_folders_and_links_inside_are_extracted(tmp_path):
    # `tar czf model.tar.gz -C run .` names members "./config.json"; links inside are fine
    archive = tmp_path / "dotted.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in (".", "./vocabulary"):
            member = tarfile.TarInfo(name)
            member.type = tarfile.DIRTYPE
            tar.addfile(member)
        data = tarfile.TarInfo("./vocabulary/tokens.txt")
        data.size = 3
        tar.addfile(data, io.BytesIO(b"abc"))
        for name, kind, target in [
            ("./tokens_link", tarfile.SYMTYPE, "vocabulary/tokens.txt"),
            ("./vocabulary/up", tarfile.SYMTYPE, "../vocabulary"),
            ("./tokens_hard", tarfile.LNKTYPE, "./vocabulary/tokens.txt"),
        ]:
            link = tarfile.TarInfo(name)
            link.type, link.linkname = kind, target
            tar.addfile(link)
    destination = tmp_path / "extracted"
    destination.mkdir()
    extract_archive_safely(str(archive), str(destination))
    assert (destination / "tokens_link").read_text() == "abc"
    assert (destination / "tokens_hard").read_text() == "abc"
    assert (destination / "vocabulary" / "up").is_symlink()


@pytest.mark.parametrize(
    "members, offending, problem",
    [
        # a link inside, then a file written through it
        ([("a", "sym", "."), ("a/b", "file", None)], "a/b", "written through the symlink 'a'"),
        # links that resolve outside only once another link exists, in either order
        ([("a", "sym", "."), ("b", "sym", "a/..")], "b", "through the symlink 'a'"),
        ([("b", "sym", "a/.."), ("a", "sym", ".")], "b", "through the symlink 'a'"),
        ([("d/a", "sym", ".."), ("h", "hard", "d/a/../../x")], "h", "through the symlink 'd/a'"),
        ([("h", "hard", "../outside/x")], "h", "outside the destination"),
        ([("f/../x", "file", None)], "f/../x", "has a '..' component"),
        ([("blk", "block", None)], "blk", "is a device file or FIFO"),
    ],
)
def test_link_chains_and_other_tricks_are_refused(members, offending, problem, tmp_path, temp_root):
    archive = tmp_path / "tricks.tar.gz"
    kinds = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "block": tarfile.BLKTYPE}
    with tarfile.open(archive, "w:gz") as tar:
        for name, kind, target in members:
            member = tarfile.TarInfo(name)
            if kind == "file":
                tar.addfile(member, io.BytesIO(b""))
                continue
            member.type = kinds[kind]
            member.linkname = target or ""
            tar.addfile(member)
    with pytest.raises(UnsafeArchiveError) as error:
        with safe_archive_extraction.safe_extracted_archive(str(archive)):
            pass
    assert_refused(error, str(archive), offending)
    assert problem in str(error.value)
    assert list(temp_root.iterdir()) == []


def test_the_size_limit_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(MAX_ARCHIVE_BYTES_VARIABLE, raising=False)
    assert max_archive_bytes() == DEFAULT_MAX_ARCHIVE_BYTES == 4 * 1024**3
    monkeypatch.setenv(MAX_ARCHIVE_BYTES_VARIABLE, "12345")
    assert max_archive_bytes() == 12345
    for bad in ("lots", "0", "-5", "1.5"):
        monkeypatch.setenv(MAX_ARCHIVE_BYTES_VARIABLE, bad)
        with pytest.raises(ConfigurationError, match=f"{MAX_ARCHIVE_BYTES_VARIABLE} must be a"):
            max_archive_bytes()


def test_the_size_limit_admits_an_archive_that_fits(tmp_path, outside, temp_root, monkeypatch):
    archive, _ = evil_archive(tmp_path, "oversized", outside, monkeypatch)
    monkeypatch.setenv(MAX_ARCHIVE_BYTES_VARIABLE, str(int(oversize_limit(BASE)) * 2))
    assert isinstance(load_archive(archive).model, DenseLanguageModel)


def test_pretrained_model_initializer_refuses_an_attack(tmp_path, outside, temp_root, monkeypatch):
    archive, member = evil_archive(tmp_path, "symlink", outside, monkeypatch)
    with pytest.raises(UnsafeArchiveError) as error:
        PretrainedModelInitializer(archive)
    assert_refused(error, archive, member)
    assert list(temp_root.iterdir()) == []


class _Payload:
    """Unpickling this would run code; `weights_only` loading must refuse it."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('code ran')",))


def test_a_weights_file_with_a_pickled_object_is_refused(tmp_path, outside, temp_root):
    # a structurally safe archive whose weights.th runs code when unpickled (torch_safe_globals)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(BASE) as tar:
        extract_archive_safely(str(BASE), str(unpacked))
        names = tar.getnames()
    state = torch.load(unpacked / "weights.th")
    marker = outside / "CODE_RAN"
    state["payload"] = _Payload(str(marker))
    torch.save(state, unpacked / "weights.th")
    evil = tmp_path / "pickled.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        for name in names:
            tar.add(unpacked / name, arcname=name, recursive=False)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_archive(str(evil))
    assert not marker.exists()
    assert list(temp_root.iterdir()) == []
