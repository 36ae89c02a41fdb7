"""
**Replaces**: nothing; sets the loggers of AllenNLP, allennlp-models and this package (and the
root logger) to `WARNING` when this package is imported by AllenNLP's command line (`allennlp`,
where `allennlp.__main__` has set logging up at `INFO` already, or `ldnet-allennlp` /
`python -m ldnet_allennlp`, which set it up next: hence the named loggers, which
`logging.basicConfig` leaves alone) to run one of `QUIET_COMMANDS` (`predict`, `ldnet-tag`,
`ldnet-serve`), unless the user
asks for AllenNLP's INFO log: `--verbose` on the command line (a flag of `ldnet-tag` and
`ldnet-serve`), or AllenNLP's own environment variables `ALLENNLP_LOG_LEVEL` (e.g.
`ALLENNLP_LOG_LEVEL=INFO allennlp predict ...`) or `ALLENNLP_DEBUG`, which then decide.

**Why**: these commands print what the user asked for (tags, predictions, the served address);
AllenNLP's INFO log (every parameter of the archive's config, every initialiser, over 300
lines for one tagged sentence) buried it, and warnings a user can act on with it. Training and
evaluation keep their INFO log (`allennlp train` sets its own log up again; `evaluate` reports
its metrics through it).

**Targets**: AllenNLP 2.10.1 (`allennlp/__main__.py`'s `logging.basicConfig`).
**Remove when**: AllenNLP's command line logs at `WARNING` by default (never: it is archived).
**Test**: `tests/patches/command_line_logging_test.py`.
"""

import logging
import os
import sys

QUIET_COMMANDS = ("predict", "ldnet-tag", "ldnet-serve")
QUIETED_LOGGERS = ("", "allennlp", "allennlp_models", "ldnet_allennlp")  # "": the root logger
# the programs of AllenNLP's command line besides `allennlp.__main__`: the `ldnet-allennlp`
# script and `python -m ldnet_allennlp`
PROGRAMS = ("ldnet-allennlp", os.path.join("ldnet_allennlp", "__main__.py"))
VERBOSE_FLAG = "--verbose"
ALLENNLP_VARIABLES = ("ALLENNLP_LOG_LEVEL", "ALLENNLP_DEBUG")


def quiet_wanted() -> bool:
    """
    Whether this process is AllenNLP's command line running one of `QUIET_COMMANDS` (the first
    argument after the program, as AllenNLP reads it) with no request for the INFO log.

    # Returns

    `True` when the root logger should be lowered to `WARNING`.
    """
    program = sys.argv[0] if sys.argv else ""
    original = list(getattr(sys, "orig_argv", []))
    # `python -m ldnet_allennlp`: while the package is imported, sys.argv[0] is "-m"
    module = original[original.index("-m") + 1] if "-m" in original[:-1] else None
    command_line = (
        "allennlp.__main__" in sys.modules
        or program.endswith(PROGRAMS)
        or module in ("allennlp", "ldnet_allennlp")
    )
    if not command_line or len(sys.argv) < 2:
        return False
    if sys.argv[1] not in QUIET_COMMANDS or VERBOSE_FLAG in sys.argv[2:]:
        return False
    return not any(os.environ.get(name) for name in ALLENNLP_VARIABLES)


def apply() -> None:
    """Idempotent: sets `QUIETED_LOGGERS` to `WARNING` where `quiet_wanted()`."""
    if quiet_wanted():
        for name in QUIETED_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
