"""
**Replaces**: `allennlp.common.registrable.Registrable.resolve_class_name`, through which every
component of a config becomes a class (`from_params` for each `"type"`, or a bare string where a
component is expected; `by_name`; the vocabulary and predictor of an archive), with AllenNLP's
own method that first refuses a name that is not registered but is a module path
(`"subprocess.Popen"`), unless `LDNET_ALLOW_CLASS_PATHS=1`. Registered names work as before.

**Why**: AllenNLP imports such a path and calls what it finds with the config's parameters. A
model archive's `config.json` is read that way by `load_archive` (and `allennlp evaluate` builds
its data loader from it), so an archive whose config said `{"dataset_reader": {"type":
"subprocess.Popen", "args": [...]}}` ran that command on `allennlp predict`, with nothing unusual
in its members or its weights. An archive is data, never code: a
config may only name registered components (`--include-package` / `.allennlp_plugins` register a
package's own). Nothing in this repository, AllenNLP or allennlp-models uses class paths; for a
config you trust that does, `LDNET_ALLOW_CLASS_PATHS=1` restores AllenNLP's behaviour.

**Targets**: AllenNLP 2.10.1.
**Remove when**: AllenNLP stops importing class paths from configs (never: AllenNLP is archived).
**Test**: `tests/patches/registrable_class_paths_test.py` (and `tests/archive_safety_test.py`:
the package's loading paths).
"""

import os
from typing import Optional, Tuple, Type

from allennlp.common.checks import ConfigurationError
from allennlp.common.registrable import Registrable

ALLOW_CLASS_PATHS_VARIABLE = "LDNET_ALLOW_CLASS_PATHS"

ALLENNLP_RESOLVE_CLASS_NAME = Registrable.__dict__["resolve_class_name"].__func__


class ClassPathError(ConfigurationError):
    """A config names a class by its module path instead of a registered name."""


def resolve_registered_class_name(cls: Type[Registrable], name: str) -> Tuple[type, Optional[str]]:
    if (
        "." in name
        and name not in Registrable._registry[cls]
        and os.environ.get(ALLOW_CLASS_PATHS_VARIABLE) != "1"
    ):
        raise ClassPathError(
            f"Refusing the {cls.__name__} {name!r}: it is not a registered name but a module "
            "path, which AllenNLP would import and call with the config's parameters (a model "
            "archive's config.json included: an archive is data, never code). Name a registered "
            "component (a package's own are registered by --include-package or "
            f".allennlp_plugins), or, only for a config you trust, set "
            f"{ALLOW_CLASS_PATHS_VARIABLE}=1."
        )
    return ALLENNLP_RESOLVE_CLASS_NAME(cls, name)


def apply() -> None:
    """Idempotent: always wraps AllenNLP's own method, never a wrapped one."""
    Registrable.resolve_class_name = classmethod(resolve_registered_class_name)
