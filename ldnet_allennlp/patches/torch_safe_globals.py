"""
**Replaces**: nothing of AllenNLP's; adds numpy's scalar reconstructor and numeric dtype classes
to torch's `weights_only` allow-list (`torch.serialization.add_safe_globals`).

**Why**: torch >= 2.6 loads with `weights_only=True` by default. AllenNLP's training-state
checkpoints hold numpy scalars (metric tracker, scheduler state), so `allennlp train --recover`
fails with `UnpicklingError: Weights only load failed`. `weights_only` stays on (it refuses
arbitrary pickled objects, `tests/tagging/cli_test.py`); only these numpy types are allowed.

**Targets**: AllenNLP 2.10.1 on torch 2.14.1 / numpy 2.4 (any torch >= 2.6).
**Remove when**: AllenNLP's checkpoints hold no numpy scalars (never: AllenNLP is archived), or
torch allows them by default.
**Test**: `tests/patches/torch_safe_globals_test.py`.
"""

import numpy
import torch


def numpy_checkpoint_globals() -> list:
    """The numpy objects a pickled numpy scalar needs: its reconstructor and its dtype."""
    numeric_dtypes = [
        numpy.dtypes.BoolDType,
        numpy.dtypes.Int8DType,
        numpy.dtypes.Int16DType,
        numpy.dtypes.Int32DType,
        numpy.dtypes.Int64DType,
        numpy.dtypes.UInt8DType,
        numpy.dtypes.UInt16DType,
        numpy.dtypes.UInt32DType,
        numpy.dtypes.UInt64DType,
        numpy.dtypes.Float16DType,
        numpy.dtypes.Float32DType,
        numpy.dtypes.Float64DType,
    ]
    return [numpy._core.multiarray.scalar, numpy.dtype] + numeric_dtypes


def apply() -> None:
    """Idempotent: torch keeps its allow-list as a set of names."""
    torch.serialization.add_safe_globals(numpy_checkpoint_globals())
