"""
**Replaces**: nothing; adds a `logging.Filter` to the `allennlp.data.vocabulary` logger that
drops its "vocabulary serialization directory ... is not empty" warning when the folder is a
serialization directory's `vocabulary/` being resumed.

**Why**: `allennlp train --recover` reloads the run's vocabulary and saves it back into the same
folder, and AllenNLP warns that the folder is not empty: nothing for a user to do. The folder is
a resumed run's when its parent holds the run's `config.json` (a fresh run's folder is empty,
and `-f` deletes it). Every other non-empty folder still warns.

**Targets**: AllenNLP 2.10.1.
**Remove when**: AllenNLP stops warning on a resumed run (never: AllenNLP is archived).
**Test**: `tests/patches/vocabulary_resave_warning_test.py`.
"""

import logging
import os


class RecoveredVocabularyFilter(logging.Filter):
    """Drops the "vocabulary serialization directory ... is not empty" warning of a resume."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("vocabulary serialization directory"):
            return True
        directory = str(record.args[0]) if record.args else ""
        resuming = os.path.basename(os.path.normpath(directory)) == "vocabulary" and os.path.exists(
            os.path.join(os.path.dirname(os.path.normpath(directory)), "config.json")
        )
        return not resuming


def apply() -> None:
    """Idempotent: adds the filter only if the logger has none of its kind."""
    vocabulary_logger = logging.getLogger("allennlp.data.vocabulary")
    if not any(isinstance(f, RecoveredVocabularyFilter) for f in vocabulary_logger.filters):
        vocabulary_logger.addFilter(RecoveredVocabularyFilter())
