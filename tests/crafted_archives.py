"""
Malicious model archives, built in a test from a real fixture archive: every member of the
fixture, plus the members of one attack (`ATTACKS`) aimed at a directory `outside` every
temporary directory. Without `ldnet_allennlp/patches/safe_archive_extraction.py`, AllenNLP's
`load_archive` extracts each of them and writes into `outside` (or creates a device file / FIFO,
or fills the disk). Used by `tests/patches/safe_archive_extraction_test.py` and
`tests/archive_safety_test.py`. `craft_config_archive` crafts another: its config names a module
path, which AllenNLP would import and call (`ldnet_allennlp/patches/registrable_class_paths.py`).

    offending = craft_archive(FIXTURE_ARCHIVES / "ner_ldnet.tar.gz", tmp_path / "evil.tar.gz",
                              "symlink", outside)
    # "offending" is the name of the member the error must name
"""

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Dict

from tests.conftest import FIXTURES_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"
TAGGER_ARCHIVE = (
    FIXTURE_ARCHIVES / "ner_ldnet.tar.gz"
)  # an LD-Net tagger (layer_selection over two LMs)
LM_ARCHIVES = {
    "forward": FIXTURE_ARCHIVES / "lm_forward.tar.gz",
    "backward": FIXTURE_ARCHIVES / "lm_backward.tar.gz",
}

# what each attack adds; the name of the member that must be refused is `craft_archive`'s result
ATTACKS = ("traversal", "absolute", "symlink", "hardlink", "fifo", "device", "oversized")
PAYLOAD = b"written by a malicious archive\n"
VICTIM = "victim.txt"  # a file in `outside` that the hard-link attack overwrites
VICTIM_TEXT = "the original content\n"
OVERSIZED_BYTES = 64 * 1024


def escape(outside: Path) -> str:
    """A relative path that leads from any directory to `outside` (`..` up to the root)."""
    return "../" * 40 + outside.resolve().as_posix().lstrip("/")


def _file(name: str, data: bytes = PAYLOAD) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.size = len(data)
    member.mode = 0o644
    return member


def _special(name: str, kind: bytes, **attributes) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    for key, value in attributes.items():
        setattr(member, key, value)
    return member


def craft_archive(base: Path, output: Path, attack: str, outside: Path) -> str:
    """
    Writes `output`: `base`'s members plus those of `attack` (one of `ATTACKS`), aimed at the
    existing directory `outside` (which gets the hard-link attack's `VICTIM`). Returns the name
    of the member that must be refused.
    """
    extra = []  # (TarInfo, data or None)
    if attack == "traversal":  # ../../../../<dir>/TRAVERSED
        extra.append((_file(escape(outside) + "/TRAVERSED"), PAYLOAD))
    elif attack == "absolute":
        extra.append((_file((outside.resolve() / "ABSOLUTE").as_posix()), PAYLOAD))
    elif attack == "symlink":  # a link out, then a file written through it
        extra.append(
            (_special("vocabulary/escape", tarfile.SYMTYPE, linkname=escape(outside)), None)
        )
        extra.append((_file("vocabulary/escape/THROUGH_SYMLINK"), PAYLOAD))
    elif attack == "hardlink":  # a link to a file outside, then a file written over the link
        (outside / VICTIM).write_text(VICTIM_TEXT)
        target = str((outside / VICTIM).resolve())
        extra.append((_special("victim", tarfile.LNKTYPE, linkname=target), None))
        extra.append((_file("victim"), PAYLOAD))
    elif attack == "fifo":
        extra.append((_special("vocabulary/pipe", tarfile.FIFOTYPE), None))
    elif attack == "device":
        extra.append((_special("null", tarfile.CHRTYPE, devmajor=1, devminor=3), None))
    elif attack == "oversized":  # refused once LDNET_MAX_ARCHIVE_BYTES is `oversize_limit(base)`
        extra.append((_file("padding.bin", bytes(OVERSIZED_BYTES)), bytes(OVERSIZED_BYTES)))
    else:
        raise ValueError(f"unknown attack {attack!r}")
    with tarfile.open(base, "r:gz") as source, tarfile.open(output, "w:gz") as target:
        for member in source.getmembers():
            target.addfile(member, source.extractfile(member) if member.isreg() else None)
        for member, data in extra:
            target.addfile(member, io.BytesIO(data) if data is not None else None)
    return extra[0][0].name


CLASS_PATH = "os.mkdir"  # any module path works; this one leaves a visible trace, harmlessly


def craft_config_archive(base: Path, output: Path, section: str, marker: Path) -> str:
    """
    Writes `output`: `base` with its config's `section` (e.g. `"dataset_reader"`) replaced by
    `{"type": CLASS_PATH, "path": marker}`, which AllenNLP alone would call: `os.mkdir(marker)`.
    Returns the class path the error must name.
    """
    with tarfile.open(base, "r:gz") as source, tarfile.open(output, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member) if member.isreg() else None
            if member.name == "config.json":
                config = json.load(data)
                config[section] = {"type": CLASS_PATH, "path": str(marker)}
                encoded = json.dumps(config).encode()
                member.size = len(encoded)
                data = io.BytesIO(encoded)
            target.addfile(member, data)
    return CLASS_PATH


def oversize_limit(base: Path) -> str:
    """An `LDNET_MAX_ARCHIVE_BYTES` that `base` fits in and its `oversized` attack does not."""
    with tarfile.open(base, "r:gz") as archive:
        size = sum(member.size for member in archive.getmembers() if member.isreg())
    return str(size + OVERSIZED_BYTES // 2)


def snapshot(directory: Path) -> Dict[str, bytes]:
    """Every file under `directory` (links not followed) and its content."""
    files = {}
    for root, folders, names in os.walk(directory):
        for name in folders + names:
            path = Path(root) / name
            relative = path.relative_to(directory).as_posix()
            files[relative] = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    return files
