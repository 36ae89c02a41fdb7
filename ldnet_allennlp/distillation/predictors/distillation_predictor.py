"""
`allennlp predict` for the distillation readers' archives (the student, and a teacher trained on
a `distillation_tsv` reader): input `{"sentence": ...}` or `{"premise": ..., "hypothesis": ...}`.
"""

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data import Instance
from allennlp.predictors.predictor import Predictor


@Predictor.register("distillation_classifier")
class DistillationPredictor(Predictor):
    """Builds the instance through the archive's reader (`text_to_instance`)."""

    def predict(self, sentence: str) -> JsonDict:
        return self.predict_json({"sentence": sentence})

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if "sentence" in json_dict:
            return self._dataset_reader.text_to_instance(sentence=json_dict["sentence"])
        if "premise" in json_dict and "hypothesis" in json_dict:
            return self._dataset_reader.text_to_instance(
                premise=json_dict["premise"], hypothesis=json_dict["hypothesis"]
            )
        raise ConfigurationError(
            f"Predictor input needs 'sentence' or 'premise' and 'hypothesis'; got {list(json_dict)}"
        )
