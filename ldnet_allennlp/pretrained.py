"""
The models shipped in the repository's `pretrained/` folder, by name.

`pretrained/MANIFEST.json` lists them (`scripts/pretrained_manifest.py` writes it). Wherever a
config takes a dense-LM archive (`forward_lm_archive` / `backward_lm_archive` of `layer_selection`
and `dense_lm_scalar_mix`, `lm_archive` of `dense_lm_tokens`, `archive_file` of
`dense_language_model_from_archive`), `"pretrained:<name>"` names a shipped archive, e.g.
`"pretrained:lm_forward"`, so a config needs no file path.

The folder is `pretrained/` beside the `ldnet_allennlp` package (a source checkout or an editable
install), or the folder named by the environment variable `LDNET_PRETRAINED_DIR`.
"""

import json
import os
from pathlib import Path
from typing import Dict

from allennlp.common.checks import ConfigurationError

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
