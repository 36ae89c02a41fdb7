"""
The models shipped in the repository's `pretrained/` folder, by name.

`pretrained/MANIFEST.json` lists them (`scripts/pretrained_manifest.py` writes it). Wherever a
config takes a dense-LM archive (`forward_lm_archive` / `backward_lm_archive` of `layer_selection`
and `dense_lm_scalar_mix`, `lm_archive` of `dense_lm_tokens`, `archive_file` of
`dense_language_model_from_archive`), `"pretrained:<name>"` names a shipped archive, e.g.
`"pretrained:lm_forward"`, so a config needs no file path.

`load_pretrained(name)` returns a shipped tagger as a ready predictor:

    from ldnet_allennlp import load_pretrained
    ner = load_pretrained("ner")
    ner.predict_json({"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn."})

The folder is `pretrained/` beside the `ldnet_allennlp` package (a source checkout or an editable
install), or the folder named by the environment variable `LDNET_PRETRAINED_DIR`.
"""

import json
import os
from pathlib import Path
from typing import Dict, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.common.file_utils import file_sha256

PREFIX = "pretrained:"


def pretrained_dir() -> Path:
    default = Path(__file__).resolve().parent.parent / "pretrained"
    return Path(os.environ.get("LDNET_PRETRAINED_DIR", default))


def manifest() -> Dict[str, Dict]:
    """`pretrained/MANIFEST.json`: name -> facts (`file`, `what`, `sha256`, ...)."""
    path = pretrained_dir() / "MANIFEST.json"
    if not path.exists():
        raise ConfigurationError(
            f"No pretrained models found: {path} does not exist (set LDNET_PRETRAINED_DIR to the "
            "folder that holds MANIFEST.json)."
        )
    return json.loads(path.read_text())


def resolve_archive(archive_file: str) -> str:
    """`"pretrained:<name>"` -> the path of that shipped archive; any other value unchanged."""
    if not archive_file.startswith(PREFIX):
        return archive_file
    name = archive_file[len(PREFIX) :]
    entries = manifest()
    if name not in entries:
        raise ConfigurationError(
            f"{archive_file!r}: no pretrained model named {name!r}; "
            f"pretrained/MANIFEST.json lists {sorted(entries)}."
        )
    return str(pretrained_dir() / entries[name]["file"])


def shipped_name(path: str) -> Optional[str]:
    """The manifest name of the shipped archive whose bytes `path` holds (size and sha256), or
    `None` (also when no manifest is there)."""
    try:
        entries = manifest()
    except ConfigurationError:
        return None
    size = os.path.getsize(path)
    candidates = [n for n, e in entries.items() if e.get("size_bytes") == size]
    if not candidates:
        return None
    digest = file_sha256(path)
    return next((n for n in candidates if entries[n].get("sha256") == digest), None)


def load_pretrained(
    name: str, predictor_name: Optional[str] = None, cuda_device: int = -1
) -> Predictor:
    """
    The shipped model `name` (a key of `pretrained/MANIFEST.json`, e.g. `"ner"` or `"chunk"`)
    as a `Predictor`: the manifest's `predictor` unless `predictor_name` names another.
    Language-model archives are not predictors: use them as `"pretrained:<name>"` in a config.
    """
    entries = manifest()
    if name not in entries:
        raise ConfigurationError(
            f"no pretrained model named {name!r}; pretrained/MANIFEST.json lists {sorted(entries)}."
        )
    if entries[name].get("kind") == "runtime_export":
        of = entries[name].get("of")
        raise ConfigurationError(
            f"{name!r} is the runtime export of {of!r} (numpy and onnxruntime, no torch): tag "
            f'with ldnet_runtime.Tagger("{of}") or `ldnet-tag --model {of}`; '
            f'load_pretrained("{of}") gives the AllenNLP predictor.'
        )
    predictor_name = predictor_name or entries[name].get("predictor")
    if predictor_name is None:
        raise ConfigurationError(
            f"{name!r} is a {entries[name].get('kind', 'model')} archive, not a tagger: use it as "
            f'"{PREFIX}{name}" in a config (e.g. forward_lm_archive), or pass predictor_name.'
        )
    archive = load_archive(resolve_archive(PREFIX + name), cuda_device=cuda_device)
    return Predictor.from_archive(archive, predictor_name)
