"""
**Replaces**: `nltk.download`, with a wrapper that does nothing (and returns `False`, NLTK's
answer for a failed download) when it is called by allennlp-models'
`allennlp_models.rc.tools.narrativeqa` module; every other caller gets NLTK's own `download`.

**Why**: that module calls `nltk.download("punkt")` and `nltk.download("wordnet")` when it is
imported and NLTK's punkt data is missing, and AllenNLP imports it with every default plugin,
whatever the command. Offline that prints 8 lines of `[nltk_data] Error loading ...` to stderr
at every start-up (online it downloads data that nothing of ours uses). Nothing for a user to
do. It helps wherever this package is imported before allennlp-models' plugins: `ldnet-allennlp`
(and `python -m ldnet_allennlp`), `ldnet-tag`, and Python code that imports `ldnet_allennlp`
first. The plain `allennlp` command imports allennlp-models' plugins before any plugin of
`.allennlp_plugins`, so there the lines still appear.

**Targets**: allennlp-models 2.10.1 (NLTK 3.10).
**Remove when**: allennlp-models stops downloading at import (never: it is archived).
**Test**: `tests/patches/nltk_download_test.py`.
"""

import functools
import sys
from typing import Any

SILENCED_CALLER = "allennlp_models.rc.tools.narrativeqa"


def apply() -> None:
    """Idempotent: wraps `nltk.download` once (does nothing where NLTK is not installed)."""
    try:
        import nltk
    except ImportError:
        return
    if getattr(nltk.download, "_ldnet_silenced", False):
        return
    original = nltk.download

    @functools.wraps(original)
    def download(*args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__") == SILENCED_CALLER:
            return False
        return original(*args, **kwargs)

    download._ldnet_silenced = True  # type: ignore[attr-defined]
    nltk.download = download
