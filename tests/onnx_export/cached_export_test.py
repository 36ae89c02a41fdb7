"""
`ldnet-tag` by a shipped tagger's name tags with the runtime (no torch, no AllenNLP) once that
tagger's export is in the runtime's cache (`--cache-export` puts it there), or from its shipped
runtime export (`pretrained/`'s `<name>_runtime`), which needs no export step; an export of the
current archive in the cache comes first.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from ldnet_runtime.shipped_exports import cached_export
from ldnet_runtime.tagging import runtime_folder
from tests.conftest import PROJECT_ROOT

CHECK = (
    "import sys; from ldnet_runtime.tag_command import main; main(sys.argv[1:]); "
    "print(sorted(m for m in ('torch', 'allennlp', 'ldnet_allennlp') if sys.modules.get(m)), "
    "file=sys.stderr)"
)


def test_a_shipped_name_uses_its_cached_export(fixture_exports, tmp_path, monkeypatch):
    entries = json.loads((PROJECT_ROOT / "pretrained" / "MANIFEST.json").read_text())
    entry = entries["ner_pruned"]
    folder = tmp_path / f"ner_pruned-{entry['sha256'][:12]}"
    monkeypatch.setenv("LDNET_EXPORT_CACHE", str(tmp_path))
    if "ner_pruned_runtime" in entries:  # the shipped runtime export, unpacked
        shipped = tmp_path / f"ner_pruned-runtime-{entries['ner_pruned_runtime']['sha256'][:12]}"
        assert cached_export("ner_pruned") == shipped
        assert runtime_folder("ner_pruned") == shipped
    else:
        assert cached_export("ner_pruned") is None
        assert runtime_folder("ner_pruned") is None  # AllenNLP tags it
    # a stand-in export (the fixtures' tagger) where the shipped tagger's export would be
    shutil.copytree(fixture_exports["ner_ldnet_pruned"], folder)
    assert cached_export("ner_pruned") == folder
    assert runtime_folder("ner_pruned") == folder
    assert cached_export("no_such_tagger") is None and cached_export("a/path") is None
    env = dict(os.environ, LDNET_EXPORT_CACHE=str(tmp_path), OMP_NUM_THREADS="1")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHECK, "--model", "ner_pruned", "John Smith visited Paris ."],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
    )
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1
    assert "John" in done.stdout and "Paris" in done.stdout
    assert done.stderr.strip() == "[]"  # neither torch nor AllenNLP was imported
    assert seconds < 10
