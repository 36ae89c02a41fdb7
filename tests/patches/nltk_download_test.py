"""`ldnet_allennlp.patches.nltk_download`: allennlp-models' narrativeqa downloads nothing."""

import importlib
import sys

import nltk

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.patches import nltk_download


def test_narrativeqa_import_asks_nltk_for_nothing(monkeypatch):
    # NLTK's own download, under the patch's wrapper, records what reaches it
    calls = []
    monkeypatch.setattr(nltk, "download", lambda *a, **k: calls.append(a) or True)
    nltk_download.apply()
    # as offline: NLTK finds no punkt, so the module asks for punkt and wordnet
    monkeypatch.setattr(nltk.data, "find", lambda *a, **k: (_ for _ in ()).throw(LookupError()))
    monkeypatch.delitem(sys.modules, nltk_download.SILENCED_CALLER, raising=False)
    module = importlib.import_module(nltk_download.SILENCED_CALLER)
    assert calls == [] and callable(module.get_metric_score)
    # every other caller still reaches NLTK's download, with its arguments
    assert nltk.download("punkt", quiet=True) is True and calls == [("punkt",)]


def test_apply_is_idempotent():
    nltk_download.apply()
    wrapped = nltk.download
    nltk_download.apply()
    assert nltk.download is wrapped and wrapped._ldnet_silenced
