"""
A tagger named by a shipped name (`ner`, `ner_pruned`, ... of `pretrained/MANIFEST.json`) or by
an export folder, as the folder to load, found in this order:

1. an export of the shipped archive already in the cache folder

    $LDNET_EXPORT_CACHE (default: $XDG_CACHE_HOME/ldnet_runtime/exports, or
    ~/.cache/ldnet_runtime/exports) / <name>-<first 12 hex digits of the archive's sha256>

   (so that a new shipped archive gets a new export);
2. the shipped runtime export of that tagger (the manifest's `<name>_runtime` entry: the
   default `ldnet-export` of the archive, packed by `pack_export` into one `.tar.xz` file),
   unpacked once into the cache (`<name>-runtime-<first 12 hex digits of its sha256>`), its
   sha256 checked first: no export step, no torch;
3. an export made by `python -m ldnet_allennlp ldnet-export pretrained:<name>` in a subprocess
   (the full install, with torch; this module imports none of it), kept in the cache as in 1.

`pretrained/MANIFEST.json` is looked for in `$LDNET_PRETRAINED_DIR`, beside the installed
`ldnet_allennlp` (the full install) or `ldnet_runtime` (a clone), and in `./pretrained` (the
runtime's own install, run from the repository's root). Where there is none, a cached export of
that name is used (the newest if several), else the error says which command makes one.
"""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, List, Optional, Union

from ldnet_runtime.export_format import TAGGER_FILE

CACHE_ENV = "LDNET_EXPORT_CACHE"
PRETRAINED_ENV = "LDNET_PRETRAINED_DIR"
RUNTIME_SUFFIX = "_runtime"  # the manifest's name of a tagger's shipped runtime export


def cache_dir() -> Path:
    """The folder that holds the exports of shipped taggers (see the module docstring)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ldnet_runtime" / "exports"


def is_export_dir(model: Union[str, Path]) -> bool:
    """Whether `model` is a folder that `allennlp ldnet-export` wrote (it holds `tagger.json`)."""
    return (Path(model) / TAGGER_FILE).is_file()


def pretrained_dir() -> Optional[Path]:
    """The folder of `pretrained/MANIFEST.json` (see the module docstring), or `None`."""
    if os.environ.get(PRETRAINED_ENV):
        return Path(os.environ[PRETRAINED_ENV])
    candidates: List[Path] = []
    spec = importlib.util.find_spec("ldnet_allennlp")
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).resolve().parent.parent / "pretrained")
    candidates += [Path(__file__).resolve().parent.parent / "pretrained", Path("pretrained")]
    return next((path for path in candidates if (path / "MANIFEST.json").is_file()), None)


def _manifest_entry(name: str) -> Optional[dict]:
    """`pretrained/MANIFEST.json`'s entry for `name`, or `None` where no manifest is found."""
    folder = pretrained_dir()
    if folder is None:
        if os.environ.get(PRETRAINED_ENV) or importlib.util.find_spec("ldnet_allennlp"):
            raise RuntimeError("no pretrained/MANIFEST.json: no shipped tagger can be found here.")
        return None
    entries = manifest_entries()
    if entries is None:
        path = folder / "MANIFEST.json"
        raise RuntimeError(f"{path} does not exist: no shipped tagger can be found here.")
    if name not in entries or "sha256" not in entries[name]:
        raise RuntimeError(
            f"{name!r} is neither a folder that allennlp ldnet-export wrote nor a shipped tagger "
            f"(pretrained/MANIFEST.json lists {sorted(entries)})."
        )
    return entries[name]


def manifest_entries() -> Optional[Dict[str, dict]]:
    """`pretrained/MANIFEST.json`'s entries by name (`pretrained_dir`), or `None` without one."""
    folder = pretrained_dir()
    if folder is None or not (folder / "MANIFEST.json").is_file():
        return None
    return json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))


def shipped_kinds() -> Optional[Dict[str, str]]:
    """
    Each shipped model's kind (`tagger`, `dense_language_model`, `runtime_export`) by name, as
    `pretrained/MANIFEST.json` lists them, or `None` where no manifest is found.
    """
    entries = manifest_entries()
    if entries is None:
        return None
    return {name: str(entry.get("kind", "model")) for name, entry in entries.items()}


def is_shipped_name(model: Union[str, Path]) -> bool:
    """Whether `model` can only be a shipped tagger's name (not a path, not an existing file)."""
    name = str(model)
    return bool(name) and os.sep not in name and not Path(name).exists()


def cached_export(name: str) -> Optional[Path]:
    """
    The export of the shipped tagger `name` already in the cache (for the manifest's current
    archive where the full install is here, else the newest), or `None`; never exports.

    # Parameters

    name : `str`
        A shipped tagger's name, e.g. `"ner_pruned"`.
    """
    if not is_shipped_name(name):
        return None
    try:
        entry = _manifest_entry(name)
    except RuntimeError:  # not a shipped tagger
        return None
    if entry is None:
        cached = sorted(cache_dir().glob(f"{name}-*/{TAGGER_FILE}"), key=os.path.getmtime)
        return cached[-1].parent if cached else None
    folder = cache_dir() / f"{name}-{entry['sha256'][:12]}"
    return folder if is_export_dir(folder) else shipped_runtime_export(name)


def shipped_runtime_export(name: str) -> Optional[Path]:
    """
    The shipped runtime export of the tagger `name` (the manifest's `<name>_runtime` entry),
    unpacked into the cache on first use, or `None` where none is shipped here.

    # Parameters

    name : `str`
        A shipped tagger's name, e.g. `"ner_pruned"`.
    """
    folder, entries = pretrained_dir(), manifest_entries()
    if folder is None or entries is None:
        return None
    entry = entries.get(name + RUNTIME_SUFFIX)
    if entry is None or not (folder / entry["file"]).is_file():
        return None
    unpacked = cache_dir() / f"{name}-runtime-{entry['sha256'][:12]}"
    if not is_export_dir(unpacked):
        archive = folder / entry["file"]
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            raise RuntimeError(
                f"{archive} has sha256 {digest}, not the {entry['sha256']} that "
                f"{folder / 'MANIFEST.json'} gives for {name + RUNTIME_SUFFIX!r}: a damaged or "
                "replaced file."
            )
        unpack_export(archive, unpacked)
    return unpacked


def pack_export(export_dir: Union[str, Path], archive: Union[str, Path]) -> None:
    """
    Packs the export folder `export_dir` into one `.tar.xz` file `archive`, the same bytes for
    the same files (sorted names, no owner, no dates), as `pretrained/` ships it.
    """
    folder = Path(export_dir)
    if not is_export_dir(folder):
        raise RuntimeError(f"{folder} is not a folder that allennlp ldnet-export wrote.")
    with tarfile.open(archive, "w:xz", format=tarfile.PAX_FORMAT) as packed:
        for path in sorted(folder.iterdir()):
            if not path.is_file():
                raise RuntimeError(f"{path}: an export folder holds files only.")
            info = packed.gettarinfo(str(path), arcname=path.name)
            info.uid = info.gid = info.mtime = 0
            info.uname = info.gname = ""
            info.mode = 0o644
            with open(path, "rb") as content:
                packed.addfile(info, content)


def unpack_export(archive: Union[str, Path], export_dir: Union[str, Path]) -> None:
    """
    Unpacks `archive` (`pack_export`'s) into a fresh folder beside `export_dir`, renamed to it
    when complete. Only plain files at the archive's top level are taken; anything else is an
    error naming the member.
    """
    target = Path(export_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        with tarfile.open(archive, "r:xz") as packed:
            for member in packed.getmembers():
                if not member.isfile() or "/" in member.name or member.name in ("", ".", ".."):
                    raise RuntimeError(
                        f"{archive}: member {member.name!r} is not a plain file at the top level."
                    )
                source = packed.extractfile(member)
                assert source is not None
                with source, open(partial / member.name, "wb") as written:
                    shutil.copyfileobj(source, written)
        os.replace(partial, target)
    except OSError:  # another process made it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
        if not is_export_dir(target):
            raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def export_dir_of(model: Union[str, Path], quiet: bool = True) -> Path:
    """
    The export folder for `model`, made first where it is a shipped tagger not exported yet.

    # Parameters

    model : `Union[str, Path]`
        A folder that `allennlp ldnet-export` wrote, or a shipped tagger's name.
    quiet : `bool`, optional (default = `True`)
        Whether to hide the exporter's output (shown on failure).

    # Returns

    The folder, ready for `ldnet_runtime.Tagger`.
    """
    if is_export_dir(model):
        return Path(model)
    name = str(model)
    if os.sep in name or Path(name).exists():
        raise RuntimeError(f"{name} is not a folder that allennlp ldnet-export wrote.")
    entry = _manifest_entry(name)
    if entry is not None and not is_export_dir(cache_dir() / f"{name}-{entry['sha256'][:12]}"):
        shipped = shipped_runtime_export(name)
        if shipped is not None:
            return shipped
    if entry is None or importlib.util.find_spec("ldnet_allennlp") is None:
        cached = sorted(cache_dir().glob(f"{name}-*/{TAGGER_FILE}"), key=os.path.getmtime)
        if cached:
            return cached[-1].parent
        raise RuntimeError(
            f"{name!r} is not an export folder, and no export of the shipped tagger {name!r} is "
            f"in {cache_dir()}. Make one with the full install: `allennlp ldnet-export "
            f"pretrained:{name} -o {cache_dir() / (name + '-<sha>')}`, or give an export folder."
        )
    folder = cache_dir() / f"{name}-{entry['sha256'][:12]}"
    if not is_export_dir(folder):
        _export(name, folder, quiet)
    return folder


def _export(name: str, folder: Path, quiet: bool) -> None:
    """`ldnet-export pretrained:<name>` into a fresh folder beside `folder`, then renamed to it,
    so that an interrupted export leaves no half folder."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "ldnet_allennlp", "ldnet-export", f"pretrained:{name}"]
    command += ["-o", str(partial)]
    process = subprocess.run(command, capture_output=quiet, text=True)
    if process.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        detail = (process.stderr or "")[-2000:] if quiet else ""
        raise RuntimeError(f"exporting the shipped tagger {name!r} failed: {detail}")
    try:
        os.replace(partial, folder)
    except OSError:  # another process made it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
        if not is_export_dir(folder):
            raise
