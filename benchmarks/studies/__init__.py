"""
The registered studies: each is a module here that declares `STUDY` (a
`benchmarks.harness.study.Study`). `python -m benchmarks` and the report know the studies
listed in `STUDY_MODULES`, in this order.
"""

import importlib
from typing import List

from benchmarks.harness.study import Study

# module names under benchmarks.studies, in the order of --help and of BENCHMARKS.md
STUDY_MODULES: tuple = (
    "tagging",
    "pruning",
    "pruning_budget",
    "export",
    "profile",
    "serve",
    "scalar_mix",
    "lm",
    "lm_passes",
    "lm_finetune",
    "distillation",
    "transfer_set",
    "pruned_students",
    "gpu",
)


def all_studies() -> List[Study]:
    """The `STUDY` of every module in `STUDY_MODULES`, in that order."""
    return [importlib.import_module(f"benchmarks.studies.{name}").STUDY for name in STUDY_MODULES]
