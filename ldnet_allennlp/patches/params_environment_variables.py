"""
**Replaces**: `allennlp.common.params._environment_variables`, the external variables every
jsonnet config is evaluated with (`Params.from_file`: `allennlp train`, `evaluate`, archives),
with the same variables plus defaults for the ones the environment lacks, each looked up when a
config is read. `ldnet_allennlp/__init__.py` hands `apply` the one default this package needs:
`TEACHER_MODEL_PATH`, the installed teacher's folder
(`ldnet_allennlp.distillation.classification.teacher.installed_teacher_path`); this module
imports no feature code.

**Why**: the teacher configs (`training_configs/distillation/teacher.libsonnet`) name their
pretrained transformer by `std.extVar("TEACHER_MODEL_PATH")`, a local folder (nothing is ever
downloaded), and jsonnet reads external variables only from AllenNLP's environment dict. This
keeps `allennlp train training_configs/distillation/sst2_teacher.jsonnet` working with no extra
step, without setting any environment variable. An exported `TEACHER_MODEL_PATH`, or an
`ext_vars` entry, still wins. The archive of a trained teacher stores the resolved folder.

**Targets**: AllenNLP 2.10.1.
**Remove when**: the teacher configs stop reading `TEACHER_MODEL_PATH`.
**Test**: `tests/patches/params_environment_variables_test.py`.
"""

from typing import Callable, Dict, Mapping, Optional

from allennlp.common import params

ALLENNLP_ENVIRONMENT_VARIABLES = params._environment_variables

# variable name -> a function giving its default value (None: no default)
DEFAULTS: Dict[str, Callable[[], Optional[str]]] = {}


def environment_variables_with_defaults() -> Dict[str, str]:
    """AllenNLP's environment variables, plus a value for each of `DEFAULTS` they lack."""
    variables = ALLENNLP_ENVIRONMENT_VARIABLES()
    for name, default in DEFAULTS.items():
        if name not in variables:
            value = default()
            if value is not None:
                variables[name] = value
    return variables


def apply(defaults: Mapping[str, Callable[[], Optional[str]]] = {}) -> None:
    """
    Idempotent: always wraps AllenNLP's own function, never a wrapped one.

    # Parameters

    defaults : `Mapping[str, Callable[[], Optional[str]]]`, optional (default = `{}`)
        Variables to add to `DEFAULTS`: name -> a function giving the default value, called
        each time a config is read (None: no default).
    """
    DEFAULTS.update(defaults)
    params._environment_variables = environment_variables_with_defaults
