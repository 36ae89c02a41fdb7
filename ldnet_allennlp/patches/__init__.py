"""
Every change this package makes to AllenNLP's (and torch's) behaviour, one module per change,
named after what it replaces. Each module's docstring says what it changes, why, the version it
targets, when it can go, and its test (`tests/patches/<module>_test.py`); each has an idempotent
`apply()`.

Nothing is patched when a module is imported: `ldnet_allennlp/__init__.py` calls `apply_all(...)`
once, and that is the only call. This package imports no feature code of `ldnet_allennlp`: the
two patches that add a feature (`default_callbacks`, `params_environment_variables`) are handed
it by that call.

- `torch_safe_globals`: numpy scalars in `weights_only` checkpoints (`--recover`).
- `reduce_on_plateau`: AllenNLP's scheduler without torch's removed `verbose`.
- `trainer_amp`: the trainer's `torch.cuda.amp` through `torch.amp` (no `FutureWarning`).
- `rnn_wrapper_forward`: AllenNLP's RNN encoders check their `input_size` at the first batch.
- `default_callbacks`: `exact_resume` is a default trainer callback.
- `checkpointer_load_checkpoint`: `--recover` skips (deletes) a checkpoint cut short by a kill.
- `vocabulary_resave_warning`: no "not empty" warning when `--recover` re-saves the vocabulary.
- `tqdm_underscore_warning`: no warning that "_" metrics stay off the progress bar.
- `params_environment_variables`: jsonnet's `TEACHER_MODEL_PATH` defaults to the installed teacher.
- `safe_archive_extraction`: archives are checked member by member (and for size) before any is
  extracted, by `load_archive` and by cached_path.
- `registrable_class_paths`: a config's `"type"` names a registered component, never a module path
  (`LDNET_ALLOW_CLASS_PATHS=1` for trusted configs).
- `nltk_download`: allennlp-models' narrativeqa module no longer calls `nltk.download` at import.
- `command_line_logging`: `predict`, `ldnet-tag` and `ldnet-serve` log at WARNING unless
  `--verbose` (or AllenNLP's `ALLENNLP_LOG_LEVEL` / `ALLENNLP_DEBUG`) asks for more.
"""

from typing import Callable, Mapping, Optional, Sequence, Type

from allennlp.training.callbacks import TrainerCallback

from ldnet_allennlp.patches import (
    checkpointer_load_checkpoint,
    command_line_logging,
    default_callbacks,
    nltk_download,
    params_environment_variables,
    reduce_on_plateau,
    registrable_class_paths,
    rnn_wrapper_forward,
    safe_archive_extraction,
    torch_safe_globals,
    tqdm_underscore_warning,
    trainer_amp,
    vocabulary_resave_warning,
)

_DEFAULT_CALLBACKS_PATCH = default_callbacks  # `apply_all`'s argument takes the name

PATCHES = (
    command_line_logging,  # first: the INFO lines of the patches below are then quiet too
    torch_safe_globals,
    reduce_on_plateau,
    trainer_amp,
    rnn_wrapper_forward,
    default_callbacks,
    checkpointer_load_checkpoint,
    vocabulary_resave_warning,
    tqdm_underscore_warning,
    params_environment_variables,
    safe_archive_extraction,
    registrable_class_paths,
    nltk_download,
)


def apply_all(
    default_callbacks: Sequence[Type[TrainerCallback]] = (),
    environment_defaults: Mapping[str, Callable[[], Optional[str]]] = {},
) -> None:
    """
    Applies every patch (idempotent: calling it again changes nothing).

    # Parameters

    default_callbacks : `Sequence[Type[TrainerCallback]]`, optional (default = `()`)
        Trainer callbacks to make defaults (`default_callbacks.apply`).
    environment_defaults : `Mapping[str, Callable[[], Optional[str]]]`, optional (default = `{}`)
        Defaults of jsonnet's external variables (`params_environment_variables.apply`).
    """
    arguments = {
        _DEFAULT_CALLBACKS_PATCH: (default_callbacks,),
        params_environment_variables: (environment_defaults,),
    }
    for patch in PATCHES:
        patch.apply(*arguments.get(patch, ()))
