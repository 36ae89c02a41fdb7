"""
Bad input for the package's predictors (`ldnet_tagger`, `distillation_classifier`), in process.
(`allennlp predict` through the real command line: `subcommands_test.py`.)
"""

import json
import re

import pytest
from allennlp.commands.predict import _PredictManager
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.distillation.classification.dataset_readers import TransferSetReader
from ldnet_allennlp.distillation.classification.predictors import DistillationPredictor
from ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor import TaggerPredictor
from tests.bad_input.conftest import LONG_SENTENCE, TRICKY_TOKENS
from tests.conftest import FIXTURES_ROOT

# (input line, what the error says): each is a ConfigurationError quoting the line or key
BAD_LINES = [
    ("{bad json", "is not valid JSON"),
    ('{"sentence": "unterminated}', "is not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('"just a string"', "must be a JSON object"),
    ("null", "must be a JSON object"),
]
BAD_TAGGER_INPUTS = [
    ({"text": "Paris"}, 'needs a "sentence" or a "tokens" key'),
    ({"tokens": "John Smith"}, '"tokens" must be a list of non-empty strings'),
    ({"tokens": ["John", ""]}, '"tokens" must be a list of non-empty strings'),
    ({"tokens": [1, 2]}, '"tokens" must be a list of non-empty strings'),
    ({"tokens": [["a"]]}, '"tokens" must be a list of non-empty strings'),
    ({"sentence": None}, '"sentence" must be a string'),
    ({"sentence": ["a", "b"]}, '"sentence" must be a string'),
    (
        {"tokens": ["Paris", "\ud83d", "\ude00"]},  # the halves of 😀 as two tokens
        '"tokens" must be Unicode text, but token 1\'s character 0 is U+D83D, a lone surrogate',
    ),
    (
        {"sentence": "Paris \ud800"},
        '"sentence" must be Unicode text, but character 6 is U+D800, a lone surrogate',
    ),
]
BAD_CLASSIFIER_INPUTS = [
    ({"text": "a film"}, "needs 'sentence' or 'premise' and 'hypothesis'"),
    ({"sentence": ""}, '"sentence" must be a non-empty string'),
    ({"sentence": " \t\x1c "}, '"sentence" must be a non-empty string'),
    ({"sentence": None}, '"sentence" must be a non-empty string'),
    ({"sentence": 5}, '"sentence" must be a non-empty string'),
    ({"premise": "a", "hypothesis": ""}, '"hypothesis" must be a non-empty string'),
    (
        {"premise": "a", "hypothesis": "b\udfff"},
        '"hypothesis" must be Unicode text, but character 1 is U+DFFF, a lone surrogate',
    ),
]


@pytest.fixture(scope="module")
def tagger(ldnet_run):
    return Predictor.from_archive(load_archive(str(ldnet_run / "model.tar.gz")))


@pytest.fixture(scope="module")
def classifier():
    """The tiny SST-2 student of the fixtures, built (untrained) with the transfer set's vocab."""
    root = FIXTURES_ROOT / "distillation"
    params = Params.from_file(
        str(root / "student_sst2.jsonnet"), ext_vars={"DISTILLATION_FIXTURES": str(root)}
    )
    reader = TransferSetReader()
    vocab = Vocabulary.from_instances(reader.read(str(root / "transfer" / "sst2_aug.jsonl")))
    model = Model.from_params(vocab=vocab, params=params["model"])
    return DistillationPredictor(model, reader)


@pytest.mark.parametrize("line, message", BAD_LINES)
@pytest.mark.parametrize("which", ["tagger", "classifier"])
def test_lines_that_are_not_json_objects(which, line, message, request):
    predictor = request.getfixturevalue(which)
    with pytest.raises(
        ConfigurationError, match=rf"input line \d+ .*{message}.*{re.escape(line[:5])}"
    ):
        predictor.load_line(line + "\n")


@pytest.mark.parametrize("inputs, message", BAD_TAGGER_INPUTS)
def test_tagger_inputs_of_the_wrong_shape(tagger, inputs, message):
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        tagger.predict_json(inputs)


@pytest.mark.parametrize("inputs, message", BAD_CLASSIFIER_INPUTS)
def test_classifier_inputs_of_the_wrong_shape(classifier, inputs, message):
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        classifier.predict_json(inputs)


def test_tagger_one_token_2000_tokens_control_characters_and_emoji(tagger):
    long = LONG_SENTENCE
    outputs = tagger.predict_batch_json(
        [{"tokens": ["Paris"]}, {"tokens": long}, {"tokens": TRICKY_TOKENS}, {"sentence": " \t "}]
    )
    assert [o["tokens"] for o in outputs] == [["Paris"], long, TRICKY_TOKENS, []]
    assert [len(o["tags"]) for o in outputs] == [1, 2000, len(TRICKY_TOKENS), 0]
    # raw text with control characters and emoji goes through spaCy: every token is tagged
    raw = tagger.predict_json({"sentence": "\x00\x01 Paris \x1b[31m 🙂👍🏽 \u202e"})
    assert raw["tokens"] and len(raw["tags"]) == len(raw["tokens"])


def test_classifier_one_word_2000_words_control_characters_and_emoji(classifier):
    for sentence in ["good", " ".join(["good"] * 2000), "\x00 good 🙂 👍🏽 \u202e film"]:
        output = classifier.predict_json({"sentence": sentence})
        assert output["label"] in ("0", "1")
        assert sum(output["probs"]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ('{"sentence": ""}', '"sentence" must be a non-empty string'),
        ('{"premise": "a man", "hypothesis": " "}', '"hypothesis" must be a non-empty string'),
        ('{"text": "a film"}', "Predictor input needs 'sentence' or 'premise' and 'hypothesis'"),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 2, 3])
def test_classifier_errors_name_the_input_line(classifier, tmp_path, bad_line, message, batch_size):
    """
    Through `allennlp predict`'s own loop (`_PredictManager`, in process): blank lines are not
    counted, and the bad line is named whether it is predicted alone or in a batch.
    """
    predictor = DistillationPredictor(classifier._model, classifier._dataset_reader)
    assert_error_names_line_3(
        predictor, tmp_path, '{"sentence": "a good film"}', bad_line, message, batch_size
    )


def assert_error_names_line_3(predictor, tmp_path, good, bad_line, message, batch_size):
    """
    `bad_line` as the 3rd non-blank line of an input file (after a blank and a whitespace-only
    line), run through AllenNLP's predict loop: the error is `message` prefixed by the line.
    """
    inputs = tmp_path / "input.jsonl"
    good += "\n"
    inputs.write_text(good + "\n  \n" + good + bad_line + "\n" + good, encoding="utf-8")
    manager = _PredictManager(predictor, str(inputs), None, batch_size, False, False)
    expected = rf"^input line 3 \(not counting blank lines\): {re.escape(message)}"
    with pytest.raises(ConfigurationError, match=expected):
        manager.run()
    # given in process (not read from a line), the same error names no line
    with pytest.raises(ConfigurationError, match=rf"^{re.escape(message)}"):
        predictor.predict_json(json.loads(bad_line))


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ('{"tokens": ["Paris", ""]}', '"tokens" must be a list of non-empty strings'),
        ('{"sentence": 7}', '"sentence" must be a string'),
        ('{"text": "Paris"}', 'each input line needs a "sentence" or a "tokens" key'),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 3])
def test_tagger_errors_name_the_input_line(tagger, tmp_path, bad_line, message, batch_size):
    """The tagger's content errors, through `allennlp predict`'s own loop, name the line too."""
    predictor = TaggerPredictor(tagger._model, tagger._dataset_reader)  # counts from line 1
    good = '{"sentence": "Maria visited Paris ."}'
    assert_error_names_line_3(predictor, tmp_path, good, bad_line, message, batch_size)
