"""
A tagger named by a shipped name (`ner`, `ner_pruned`, ... of `pretrained/MANIFEST.json`) or by
an export folder, as the folder to load: a shipped tagger's export is made once, by
`python -m ldnet_allennlp ldnet-export pretrained:<name>` in a subprocess (the full install,
with torch; this module imports none of it), and kept in a cache folder:

    $LDNET_EXPORT_CACHE (default: $XDG_CACHE_HOME/ldnet_runtime/exports, or
    ~/.cache/ldnet_runtime/exports) / <name>-<first 12 hex digits of the archive's sha256>

so that a new shipped archive gets a new export. Where `ldnet_allennlp` is not installed (the
runtime's own install), the manifest cannot be read: a cached export of that name is used (the
newest if several), else the error says which command makes one.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Union

from ldnet_runtime.export_format import TAGGER_FILE

CACHE_ENV = "LDNET_EXPORT_CACHE"


def cache_dir() -> Path:
    """The folder that holds the exports of shipped taggers (see the module docstring)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ldnet_runtime" / "exports"


def is_export_dir(model: Union[str, Path]) -> bool:
    """Whether `model` is a folder that `allennlp ldnet-export` wrote (it holds `tagger.json`)."""
    return (Path(model) / TAGGER_FILE).is_file()


def _manifest_entry(name: str) -> Optional[dict]:
    """`pretrained/MANIFEST.json`'s entry for `name`, read beside the installed `ldnet_allennlp`
    (not imported), or `None` where that package is not installed."""
    spec = importlib.util.find_spec("ldnet_allennlp")
    if spec is None or spec.origin is None:
        return None
    default = Path(spec.origin).resolve().parent.parent / "pretrained"
    path = Path(os.environ.get("LDNET_PRETRAINED_DIR", default)) / "MANIFEST.json"
    if not path.is_file():
        raise RuntimeError(f"{path} does not exist: no shipped tagger can be exported here.")
    entries = json.loads(path.read_text(encoding="utf-8"))
    if name not in entries or "sha256" not in entries[name]:
        raise RuntimeError(
            f"{name!r} is neither a folder that allennlp ldnet-export wrote nor a shipped tagger "
            f"(pretrained/MANIFEST.json lists {sorted(entries)})."
        )
    return entries[name]


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
    return folder if is_export_dir(folder) else None


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
    if entry is None:
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
