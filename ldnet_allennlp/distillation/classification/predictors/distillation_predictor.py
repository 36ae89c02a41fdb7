"""
`allennlp predict` for the distillation readers' archives (the student, and a teacher trained on
a `distillation_tsv` reader): input `{"sentence": ...}` or `{"premise": ..., "hypothesis": ...}`.
"""

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data import Instance
from allennlp.models import Model
from allennlp.data import DatasetReader
from allennlp.predictors.predictor import Predictor

from ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor import (
    input_line_prefix,
    load_json_object,
    refuse_lone_surrogates,
)


@Predictor.register("distillation_classifier")
class DistillationPredictor(Predictor):
    """
    Builds the instance through the archive's reader (`text_to_instance`). Bad input is a
    `ConfigurationError` naming the key and, for `allennlp predict`, the input line (`input line
    N (not counting blank lines)`): not JSON, not a JSON object, neither key, a text that is not
    a string or is empty (a classifier has nothing to say about no words).
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader, **kwargs) -> None:
        super().__init__(model, dataset_reader, **kwargs)
        self._lines_read = 0

    def load_line(self, line: str) -> JsonDict:
        self._lines_read += 1
        return load_json_object(line, self._lines_read)

    def predict(self, sentence: str) -> JsonDict:
        return self.predict_json({"sentence": sentence})

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if not isinstance(json_dict, dict):
            raise ConfigurationError(f"each input must be a JSON object, got {json_dict!r:.100}")
        if "sentence" in json_dict:
            return self._dataset_reader.text_to_instance(sentence=_text(json_dict, "sentence"))
        if "premise" in json_dict and "hypothesis" in json_dict:
            return self._dataset_reader.text_to_instance(
                premise=_text(json_dict, "premise"), hypothesis=_text(json_dict, "hypothesis")
            )
        raise ConfigurationError(
            f"{input_line_prefix(json_dict)}Predictor input needs 'sentence' or 'premise' and "
            f"'hypothesis'; got {list(json_dict)}"
        )


def _text(json_dict: JsonDict, key: str) -> str:
    text = json_dict[key]
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError(
            f'{input_line_prefix(json_dict)}"{key}" must be a non-empty string, got {text!r:.100}'
        )
    refuse_lone_surrogates(json_dict, key, [text])
    return text
