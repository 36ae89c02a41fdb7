"""
Issue 19: every way this package opens a model archive refuses a crafted one
(`tests/crafted_archives.py`: a fixture archive plus a `..` member, an absolute member, a
symlink or hard link out, a FIFO or device file, or too many bytes) with a `ConfigurationError`
naming the archive and the member, writes nothing outside its temporary directory and leaves
none behind: `allennlp predict` (the real command line once, then in process for every attack,
with `evaluate`, `ldnet-prune` and `ldnet-distill-transfer-set`), the LM archives of both LM-feature
embedders, `prune_archive` and the distillation student's online teacher. An archive whose
config names a module path (which AllenNLP would import and call) is refused on the same paths.
Benign archives still load. The patches: `ldnet_allennlp/patches/safe_archive_extraction.py`
and `registrable_class_paths.py`, each with its test.
"""

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import torch
import allennlp.commands
from allennlp.commands import main as allennlp_main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.modules.token_embedders import TokenEmbedder

import ldnet_allennlp  # noqa: F401  (registers the components, applies the patches)
from ldnet_allennlp.patches.registrable_class_paths import ClassPathError
from ldnet_allennlp.patches.safe_archive_extraction import (
    MAX_ARCHIVE_BYTES_VARIABLE,
    UnsafeArchiveError,
)
from ldnet_allennlp.pruning.cut_layers import prune_archive
from tests.cli import run_allennlp
from tests.conftest import FIXTURES_ROOT
from tests.crafted_archives import (
    ATTACKS,
    FIXTURE_ARCHIVES,
    LM_ARCHIVES,
    TAGGER_ARCHIVE,
    VICTIM,
    VICTIM_TEXT,
    craft_archive,
    craft_config_archive,
    oversize_limit,
    snapshot,
)

TEACHER_STAND_IN = FIXTURE_ARCHIVES / "student_sst2.tar.gz"  # refused before its model matters
ONLINE_STUDENT = FIXTURES_ROOT / "distillation" / "student_sst2_online.jsonnet"
SST2_TRAIN = FIXTURES_ROOT / "distillation" / "sst2" / "sst2_fixture_train.tsv"
EMBEDDERS = ("layer_selection", "dense_lm_scalar_mix")


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


@pytest.fixture
def temp_root(tmp_path, monkeypatch) -> Path:
    """Python's temporary directory for this test only, so that a leftover one shows."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    return root


@pytest.fixture
def outside(tmp_path) -> Path:
    """The directory the crafted archives aim at, outside every temporary directory."""
    directory = tmp_path / "outside"
    directory.mkdir()
    return directory


def evil_archive(base: Path, attack: str, tmp_path: Path, outside: Path, monkeypatch):
    """`(path, offending member)`: `base` plus `attack`, the size limit set for `oversized`."""
    path = tmp_path / f"{attack}_{base.name}"
    member = craft_archive(base, path, attack, outside)
    if attack == "oversized":
        monkeypatch.setenv(MAX_ARCHIVE_BYTES_VARIABLE, oversize_limit(base))
    return str(path), member


def assert_refused_cleanly(message: str, archive: str, member: str, outside: Path, before, temp):
    assert f"Refusing to extract the archive {archive}: " in message
    assert repr(member) in message
    assert snapshot(outside) == before  # nothing written outside
    if (outside / VICTIM).exists():
        assert (outside / VICTIM).read_text() == VICTIM_TEXT
    assert list(temp.iterdir()) == []  # no temporary directory left behind


def test_allennlp_predict_refuses_the_archive_of_issue_19(tmp_path, outside):
    # The real command line, as the issue ran it: a `../../<dir>/TRAVERSED` member.
    archive, member = evil_archive(TAGGER_ARCHIVE, "traversal", tmp_path, outside, None)
    inputs = tmp_path / "input.jsonl"
    inputs.write_text('{"sentence": "John Smith visited Paris ."}\n')
    temp = tmp_path / "tmp"
    temp.mkdir()
    output = tmp_path / "predictions.jsonl"
    before = snapshot(outside)
    process = run_allennlp(
        ["predict", archive, str(inputs), "--output-file", str(output), "--silent"]
        + ["--include-package", "ldnet_allennlp"],
        env={"TMPDIR": str(temp), "OMP_NUM_THREADS": "1"},
        check=False,
    )
    assert process.returncode != 0
    assert "UnsafeArchiveError: Refusing to extract the archive" in process.stderr
    assert not (outside / "TRAVERSED").exists() and not output.exists()
    # `import allennlp.models` makes torch's torchinductor_<user> folder there: not an archive's
    for leftover in temp.iterdir():
        assert leftover.name.startswith("torchinductor_"), leftover
        shutil.rmtree(leftover)
    assert_refused_cleanly(process.stderr, archive, member, outside, before, temp)


def cli_arguments(command: str, archive: str, tmp_path: Path):
    inputs = tmp_path / "input.jsonl"
    inputs.write_text('{"sentence": "John Smith visited Paris ."}\n')
    output = str(tmp_path / "output")
    return {
        "predict": ["predict", archive, str(inputs), "--output-file", output, "--silent"],
        "evaluate": ["evaluate", archive, str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")],
        "ldnet-prune": ["ldnet-prune", archive, "-o", output],
        "ldnet-distill-transfer-set": [
            "ldnet-distill-transfer-set",
            archive,
            str(SST2_TRAIN),
            output,
        ],
    }[command]


@pytest.mark.parametrize(
    "command", ["predict", "evaluate", "ldnet-prune", "ldnet-distill-transfer-set"]
)
@pytest.mark.parametrize("attack", ATTACKS)
def test_commands_refuse_each_attack(command, attack, tmp_path, outside, temp_root, monkeypatch):
    # The command line's code path (argument parsing, the subcommand), in this process.
    base = TEACHER_STAND_IN if command == "ldnet-distill-transfer-set" else TAGGER_ARCHIVE
    archive, member = evil_archive(base, attack, tmp_path, outside, monkeypatch)
    before = snapshot(outside)
    monkeypatch.setattr(sys, "argv", ["allennlp"] + cli_arguments(command, archive, tmp_path))
    # tests/conftest.py imported the plugins already; importing them again takes seconds
    monkeypatch.setattr(allennlp.commands, "import_plugins", lambda: None)
    with pytest.raises(UnsafeArchiveError) as error:
        allennlp_main(prog="allennlp")
    assert_refused_cleanly(str(error.value), archive, member, outside, before, temp_root)
    assert not (tmp_path / "output").exists()


def embedder(kind: str, forward: str, backward: str) -> TokenEmbedder:
    params = {"type": kind, "forward_lm_archive": forward, "backward_lm_archive": backward}
    return TokenEmbedder.from_params(Params(params))


@pytest.mark.parametrize("kind", EMBEDDERS)
@pytest.mark.parametrize("attack", ATTACKS)
def test_lm_embedders_refuse_each_attack(kind, attack, tmp_path, outside, temp_root, monkeypatch):
    direction = "backward" if attack in ("symlink", "fifo") else "forward"  # both are read
    archive, member = evil_archive(LM_ARCHIVES[direction], attack, tmp_path, outside, monkeypatch)
    archives = {name: str(path) for name, path in LM_ARCHIVES.items()}
    archives[direction] = archive
    before = snapshot(outside)
    with pytest.raises(UnsafeArchiveError) as error:
        embedder(kind, archives["forward"], archives["backward"])
    assert_refused_cleanly(str(error.value), archive, member, outside, before, temp_root)


@pytest.mark.parametrize("kind", EMBEDDERS)
def test_lm_embedders_load_benign_archives(kind, tmp_path, temp_root):
    archives = {}
    for direction, path in LM_ARCHIVES.items():
        archives[direction] = str(tmp_path / path.name)
        shutil.copy(path, archives[direction])
    features = embedder(kind, archives["forward"], archives["backward"])
    assert features(torch.tensor([[2, 3, 4]])).shape[:2] == (1, 3)
    assert list(temp_root.iterdir()) == []


@pytest.mark.parametrize("attack", ATTACKS)
def test_prune_archive_refuses_each_attack(attack, tmp_path, outside, temp_root, monkeypatch):
    archive, member = evil_archive(TAGGER_ARCHIVE, attack, tmp_path, outside, monkeypatch)
    output = tmp_path / "pruned.tar.gz"
    before = snapshot(outside)
    with pytest.raises(UnsafeArchiveError) as error:
        prune_archive(archive, str(output))
    assert_refused_cleanly(str(error.value), archive, member, outside, before, temp_root)
    assert not output.exists()


def test_prune_archive_loads_a_benign_archive(tmp_path, temp_root):
    archive = tmp_path / TAGGER_ARCHIVE.name
    shutil.copy(TAGGER_ARCHIVE, archive)
    # loaded, then judged: this tagger was trained without layer pruning (all masks 1)
    with pytest.raises(ConfigurationError, match="no layer has a mask of 0"):
        prune_archive(str(archive), str(tmp_path / "pruned.tar.gz"))
    assert list(temp_root.iterdir()) == []


def online_student(teacher_archive: str) -> Model:
    """The fixture's online student (`distillation_student`), its teacher not loaded yet."""
    params = Params.from_file(
        str(ONLINE_STUDENT),
        ext_vars={
            "SST2_TEACHER_ARCHIVE": teacher_archive,
            "DISTILLATION_FIXTURES": str(FIXTURES_ROOT / "distillation"),
        },
    )
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    vocab.add_tokens_to_namespace(["a", "film"], "tokens")
    return Model.from_params(vocab=vocab, params=params.pop("model"))


@pytest.mark.parametrize("attack", ATTACKS)
def test_online_teacher_refuses_each_attack(attack, tmp_path, outside, temp_root, monkeypatch):
    archive, member = evil_archive(TEACHER_STAND_IN, attack, tmp_path, outside, monkeypatch)
    student = online_student(archive)
    before = snapshot(outside)
    with pytest.raises(UnsafeArchiveError) as error:
        student.online_teacher(torch.device("cpu"))
    assert_refused_cleanly(str(error.value), archive, member, outside, before, temp_root)


def open_through(path: str, archive: str, tmp_path: Path, monkeypatch) -> None:
    """Opens `archive` the way `path` does (a command in process, or a Python loading path)."""
    if path in EMBEDDERS:
        embedder(path, archive, str(LM_ARCHIVES["backward"]))
    elif path == "prune_archive":
        prune_archive(archive, str(tmp_path / "output"))
    elif path == "online_teacher":
        online_student(archive).online_teacher(torch.device("cpu"))
    else:
        monkeypatch.setattr(sys, "argv", ["allennlp"] + cli_arguments(path, archive, tmp_path))
        monkeypatch.setattr(allennlp.commands, "import_plugins", lambda: None)
        allennlp_main(prog="allennlp")


@pytest.mark.parametrize(
    "path",
    ["predict", "evaluate", "ldnet-prune", "ldnet-distill-transfer-set", "prune_archive"]
    + list(EMBEDDERS)
    + ["online_teacher"],
)
def test_every_path_refuses_an_archive_whose_config_names_a_module_path(
    path, tmp_path, temp_root, monkeypatch
):
    if path in EMBEDDERS:
        base = LM_ARCHIVES["forward"]
    elif path in ("ldnet-distill-transfer-set", "online_teacher"):
        base = TEACHER_STAND_IN
    else:
        base = TAGGER_ARCHIVE
    # `evaluate` builds its data loader from the archive's config after loading the archive
    section = "data_loader" if path == "evaluate" else "dataset_reader"
    marker = tmp_path / "CALLED"
    archive = str(tmp_path / f"class_path_{base.name}")
    class_path = craft_config_archive(base, Path(archive), section, marker)
    with pytest.raises(ClassPathError, match=repr(class_path)):
        open_through(path, archive, tmp_path, monkeypatch)
    assert not marker.exists()
    assert list(temp_root.iterdir()) == []
    assert not (tmp_path / "output").exists()
