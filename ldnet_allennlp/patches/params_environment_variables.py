"""
**Replaces**: `allennlp.common.params._environment_variables`, the external variables every
jsonnet config is evaluated with (`Params.from_file`: `allennlp train`, `evaluate`, archives),
with the same variables plus `TEACHER_MODEL_PATH` when the environment has none: the installed
teacher's folder, looked up when a config is read
(`ldnet_allennlp.distillation.teacher.installed_teacher_path`).

**Why**: the teacher configs (`training_configs/distillation/teacher.libsonnet`) name their
pretrained transformer by `std.extVar("TEACHER_MODEL_PATH")`, a local folder (nothing is ever
downloaded), and jsonnet reads external variables only from AllenNLP's environment dict. This
keeps `allennlp train training_configs/distillation/sst2_teacher.jsonnet` working with no extra
step, without setting any environment variable (the package used to
`os.environ.setdefault("TEACHER_MODEL_PATH", ...)` when `ldnet_allennlp.distillation` was
imported). An exported `TEACHER_MODEL_PATH`, or an `ext_vars` entry, still wins. The archive of a
trained teacher stores the resolved folder, as before.

**Targets**: AllenNLP 2.10.1.
**Remove when**: the teacher configs stop reading `TEACHER_MODEL_PATH`.
**Test**: `tests/patches/params_environment_variables_test.py`.
"""

from typing import Dict

from allennlp.common import params

from ldnet_allennlp.distillation.teacher import TEACHER_MODEL_PATH_VARIABLE, installed_teacher_path

ALLENNLP_ENVIRONMENT_VARIABLES = params._environment_variables


def environment_variables_with_teacher_path() -> Dict[str, str]:
    variables = ALLENNLP_ENVIRONMENT_VARIABLES()
    if TEACHER_MODEL_PATH_VARIABLE not in variables:
        teacher_path = installed_teacher_path()
        if teacher_path is not None:
            variables[TEACHER_MODEL_PATH_VARIABLE] = teacher_path
    return variables


def apply() -> None:
    """Idempotent: always wraps AllenNLP's own function, never a wrapped one."""
    params._environment_variables = environment_variables_with_teacher_path
