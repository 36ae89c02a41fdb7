"""
`ldnet_allennlp.patches.command_line_logging`: AllenNLP's command line logs at WARNING for
`predict`, `ldnet-tag` and `ldnet-serve` unless `--verbose` or AllenNLP's variables ask for INFO.
"""

import logging
import sys

import pytest

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.patches import command_line_logging


@pytest.fixture
def root_at_info(monkeypatch):
    """
    As `allennlp/__main__.py` leaves it: root at INFO, the module in sys.modules; yields the
    root logger (AllenNLP's, allennlp-models' and ours at its level).
    """
    loggers = [logging.getLogger(name) for name in command_line_logging.QUIETED_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
    loggers[0].setLevel(logging.INFO)
    monkeypatch.setitem(sys.modules, "allennlp.__main__", sys.modules["allennlp"])
    for name in command_line_logging.ALLENNLP_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield loggers[0]
    for logger, level in zip(loggers, levels):
        logger.setLevel(level)


@pytest.mark.parametrize("command", ["predict", "ldnet-tag", "ldnet-serve"])
def test_quiet_commands_log_warnings_only(root_at_info, monkeypatch, command):
    monkeypatch.setattr(sys, "argv", ["allennlp", command, "x"])
    command_line_logging.apply()
    command_line_logging.apply()
    assert root_at_info.level == logging.WARNING
    # what `logging.basicConfig` (run after the import by ldnet-allennlp) does to the root
    root_at_info.setLevel(logging.INFO)
    for name in ("allennlp.common.params", "allennlp_models.rc", "ldnet_allennlp.glove"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING


@pytest.mark.parametrize(
    "program, original",
    [
        ("/venv/bin/ldnet-allennlp", ["python", "/venv/bin/ldnet-allennlp"]),
        ("/src/ldnet_allennlp/__main__.py", ["python", "/src/ldnet_allennlp/__main__.py"]),
        ("-m", ["python", "-m", "ldnet_allennlp", "ldnet-tag", "Bonn"]),
    ],
)
def test_ldnet_allennlp_is_the_command_line_before_allennlp_main_is_imported(
    root_at_info, monkeypatch, program, original
):
    monkeypatch.delitem(sys.modules, "allennlp.__main__")
    monkeypatch.setattr(sys, "argv", [program, "ldnet-tag", "Bonn"])
    monkeypatch.setattr(sys, "orig_argv", original)
    command_line_logging.apply()
    assert logging.getLogger("allennlp").level == logging.WARNING


@pytest.mark.parametrize(
    "argv, variables",
    [
        (["allennlp", "train", "config.jsonnet"], {}),
        (["allennlp", "evaluate", "model.tar.gz", "data"], {}),
        (["allennlp", "ldnet-tag", "--verbose", "Bonn"], {}),
        (["allennlp", "predict", "model.tar.gz", "in.jsonl"], {"ALLENNLP_LOG_LEVEL": "INFO"}),
        (["allennlp", "ldnet-serve"], {"ALLENNLP_DEBUG": "1"}),
        (["allennlp"], {}),
    ],
)
def test_other_commands_and_requests_for_info_keep_it(root_at_info, monkeypatch, argv, variables):
    monkeypatch.setattr(sys, "argv", argv)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    command_line_logging.apply()
    assert root_at_info.level == logging.INFO


def test_outside_the_command_line_nothing_changes(root_at_info, monkeypatch):
    monkeypatch.delitem(sys.modules, "allennlp.__main__")
    monkeypatch.setattr(sys, "argv", ["pytest", "predict"])
    monkeypatch.setattr(sys, "orig_argv", ["python", "-m", "pytest", "predict"])
    command_line_logging.apply()
    assert root_at_info.level == logging.INFO
