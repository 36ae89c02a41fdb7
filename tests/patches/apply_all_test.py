"""`ldnet_allennlp.patches`: every patch module is applied, once, from one place."""

import pkgutil
from pathlib import Path

from allennlp.common import params
from allennlp.common.registrable import Registrable
from allennlp.models import archival
from allennlp.modules.seq2seq_encoders.pytorch_seq2seq_wrapper import PytorchSeq2SeqWrapper
from allennlp.training import gradient_descent_trainer
from allennlp.training.checkpointer import Checkpointer

import ldnet_allennlp
from ldnet_allennlp import patches
from ldnet_allennlp.patches import safe_archive_extraction

PACKAGE_ROOT = Path(ldnet_allennlp.__file__).parent
TESTS_ROOT = Path(__file__).parent


def test_every_patch_module_is_applied_and_has_its_test():
    modules = {info.name for info in pkgutil.iter_modules(patches.__path__)}
    assert modules == {patch.__name__.rsplit(".", 1)[1] for patch in patches.PATCHES}
    for name in modules:
        assert (TESTS_ROOT / f"{name}_test.py").is_file(), name
        docstring = getattr(patches, name).__doc__
        for part in ("**Replaces**", "**Why**", "**Targets**", "**Remove when**", "**Test**"):
            assert part in docstring, (name, part)


def test_apply_all_is_idempotent():
    state = lambda: (  # noqa: E731
        gradient_descent_trainer.DEFAULT_CALLBACKS,
        gradient_descent_trainer.amp,
        PytorchSeq2SeqWrapper.forward,
        Checkpointer.load_checkpoint,
        params._environment_variables,
        archival.extracted_archive,
        safe_archive_extraction._cached_path_module.check_tarfile,
        Registrable.resolve_class_name,
    )
    before = state()
    patches.apply_all()
    patches.apply_all()
    assert state() == before


def test_apply_all_is_called_only_by_the_package():
    callers = [
        path.relative_to(PACKAGE_ROOT).as_posix()
        for path in PACKAGE_ROOT.rglob("*.py")
        if "apply_all(" in path.read_text() and path.parent.name != "patches"
    ]
    assert callers == ["__init__.py"]
