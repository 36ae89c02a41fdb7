"""
The tagger a server serves: loaded once from a shipped model's name or an archive's path, and the
facts `GET /model` and the page show about it (its `pretrained/MANIFEST.json` entry where it has
one, and what can be computed from the archive itself).
"""

import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms
from ldnet_allennlp.pretrained import PREFIX, manifest, pretrained_dir, resolve_archive
from ldnet_allennlp.tagging.flops import flops_per_token
from ldnet_runtime.tagging import DEFAULT_MODEL  # the shipped pruned NER tagger

PREDICTOR = "ldnet_tagger"


def load_tagger(model: str = DEFAULT_MODEL) -> Tuple[Predictor, Dict[str, Any]]:
    """
    `model`: a name from `pretrained/MANIFEST.json` (`ner_pruned`, `ner`), `pretrained:<name>`,
    or a tagger archive's path. Returns the `ldnet_tagger` predictor and the model's facts
    (`model_facts`).
    """
    entries = _manifest_or_empty()
    name = model[len(PREFIX) :] if model.startswith(PREFIX) else None
    if name is None and model in entries and not os.path.exists(model):
        name = model
    if name is not None:
        path = resolve_archive(PREFIX + name)  # names what to do when there is no such model
        if entries[name].get("predictor") != PREDICTOR:
            raise ConfigurationError(
                f"{model!r} is a {entries[name].get('kind', 'model')} archive, not a tagger; "
                f"ldnet-serve serves taggers (the manifest's {PREDICTOR} entries)."
            )
    else:
        path = model
        if not os.path.isfile(path):
            raise ConfigurationError(
                f"{model!r} is neither a tagger archive's path (no such file) nor a shipped "
                f"model's name (pretrained/MANIFEST.json lists {sorted(entries)}): give the path "
                "of a tagger archive (model.tar.gz)."
            )
        name = manifest_name_of(path, entries)
    archive = load_archive(path)
    if getattr(archive.model, "label_namespace", None) is None:
        raise ConfigurationError(
            f"{path}: its model ({type(archive.model).__name__}) is not a tagger; ldnet-serve "
            "serves CRF tagger archives (ldnet_crf_tagger or crf_tagger)."
        )
    predictor = Predictor.from_archive(archive, PREDICTOR)
    entry = entries.get(name) if name is not None else None
    return predictor, model_facts(archive.model, path, name, entry)


def manifest_name_of(path: str, entries: Dict[str, Dict]) -> Optional[str]:
    """The name of the manifest entry whose file is `path`, if any."""
    for name, entry in entries.items():
        shipped = pretrained_dir() / entry["file"]
        if shipped.exists() and os.path.samefile(shipped, path):
            return name
    return None


def model_facts(
    model: Model, archive: str, name: Optional[str], entry: Optional[Dict[str, Any]]
) -> Dict[str, Any]:
    """
    What `GET /model` answers: the archive's file name (`archive`: never its folder, so that
    the server does not tell its clients where its files are), its manifest `name` and `entry`
    (or null), its tags and span types (from the label namespace), the LM layers it runs, its
    parameters and multiply-adds per token (`tagging/flops.py`), and the manifest's test F1
    where there is one.
    """
    namespace = model.label_namespace
    tags = [model.vocab.get_token_from_index(i, namespace) for i in range(model.num_tags)]
    encoding = getattr(model, "label_encoding", None) or "BIOUL"
    span_types = sorted({tag.partition("-")[2] for tag in tags if "-" in tag})
    facts: Dict[str, Any] = {
        "archive": Path(archive).name,
        "name": name,
        "task": (entry or {}).get("task") or name,
        "what": (entry or {}).get("what"),
        "test_f1": (entry or {}).get("test_f1"),
        "label_namespace": namespace,
        "label_encoding": encoding,
        "tags": tags,
        "span_types": span_types,
        "lm_layers_kept": lm_layers_kept(model),
        "flops_per_token": float(flops_per_token(model)),
        "parameters": sum(p.numel() for p in model.parameters()),
        "size_bytes": Path(archive).stat().st_size,
        "manifest": entry,
    }
    if entry is None:
        facts["note"] = (
            "This archive has no entry in pretrained/MANIFEST.json: its test F1 is unknown; "
            "the other figures are computed from the archive."
        )
    return facts


def lm_layers_kept(model: Model) -> Optional[Dict[str, Any]]:
    """
    The LM layers the tagger runs (mask > 0; indices into the original LMs), per direction, and
    how many layers the LMs had; null for a tagger without LM features.
    """
    bilms = find_dense_bilms(model)
    if not bilms:
        return None
    _, bilm = bilms[0]
    return {**bilm.surviving_layers(), "of": bilm.num_lm_layers}


def _manifest_or_empty() -> Dict[str, Dict]:
    try:
        return manifest()
    except ConfigurationError:
        return {}
