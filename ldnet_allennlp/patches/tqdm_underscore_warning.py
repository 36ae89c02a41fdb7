"""
**Replaces**: nothing; adds a `logging.Filter` to the `allennlp.training.util` logger that drops
its one warning 'Metrics with names beginning with "_" will not be logged to the tqdm progress
bar.'

**Why**: a leading "_" is AllenNLP's own convention for a metric kept off the progress bar but
written to the log, `metrics.json` and TensorBoard; while the `layer_pruning` callback trains the
layer masks, the model reports every one of them that way
(`_layer_mask/<module>/<direction>_<i>`), and AllenNLP then warns that it does what it was
asked to. Nothing for a user to do, so the shipped configs' runs stay free of warnings
(`tests/configs_test.py`).

**Targets**: AllenNLP 2.10.1.
**Remove when**: AllenNLP stops warning about "_" metrics (never: AllenNLP is archived).
**Test**: `tests/patches/tqdm_underscore_warning_test.py`.
"""

import logging

MESSAGE_START = 'Metrics with names beginning with "_" will'


class UnderscoreMetricsFilter(logging.Filter):
    """Drops AllenNLP's warning that "_" metrics are not shown on the progress bar."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(MESSAGE_START)


def apply() -> None:
    """Idempotent: adds the filter only if the logger has none of its kind."""
    training_logger = logging.getLogger("allennlp.training.util")
    if not any(isinstance(f, UnderscoreMetricsFilter) for f in training_logger.filters):
        training_logger.addFilter(UnderscoreMetricsFilter())
