"""
`ldnet-tag [SENTENCE ...] [--model NAME|ARCHIVE|EXPORT_DIR] [--full] [--verbose]`: raw sentences
tagged and printed with their spans marked, e.g.
`Chancellor [Helmut Kohl]PER met [Jacques Chirac]PER in [Bonn]LOC .`; with no sentence, one per
line from standard input. It prints the tagged sentences and nothing else.

- Given a folder that `allennlp ldnet-export` wrote (`--model ner_export`), it tags here with
  `ldnet_runtime.Tagger`, importing neither torch nor AllenNLP: spaCy (raw text) would import
  torch through thinc where it is installed, so this process refuses that import.
- Anything else (a shipped tagger's name, by default `ner_pruned`, or `ner` with `--full`; a
  tagger archive) needs AllenNLP: the process becomes `python -m ldnet_allennlp ldnet-tag` with the
  same arguments (`ldnet_allennlp/tagging/commands/ldnet_tag.py`, the full install), which
  is also a command of its own and so decides again whether the runtime tags the model.

Its arguments, its default tagger, that decision and its printing are `ldnet_runtime.tagging`'s,
which `allennlp ldnet-tag` shares; this module is the console script alone.
"""

import argparse
import importlib.util
import os
import sys
from typing import List, Optional

from ldnet_runtime.tagging import (
    add_arguments,
    model_of,
    model_problem,
    runtime_folder,
    sentences_of,
    tag_with_runtime,
)

HEAVY_MODULES = ("torch",)


def refuse_heavy_imports() -> None:
    """Makes `import torch` fail in this process (spaCy's thinc then goes without it)."""
    for name in HEAVY_MODULES:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]


def main(argv: Optional[List[str]] = None) -> None:
    """
    `ldnet-tag`: the runtime for an export folder, else `python -m ldnet_allennlp ldnet-tag`.

    # Parameters

    argv : `List[str]`, optional
        The arguments (default: `sys.argv[1:]`).
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="ldnet-tag",
        description="Tag raw sentences and print them with their spans marked: with a folder "
        "that allennlp ldnet-export wrote, without torch or AllenNLP; else with AllenNLP.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        model = model_of(args)
    except ValueError as error:
        parser.error(str(error))
    folder = runtime_folder(model, getattr(args, "cache_export", False))
    if folder is not None:
        refuse_heavy_imports()
        try:
            tag_with_runtime(str(folder), sentences_of(args))
        except (OSError, ValueError, RuntimeError) as error:
            sys.exit(f"ldnet-tag: {error}")
        return
    problem = model_problem(model)
    if problem is not None:
        sys.exit(f"ldnet-tag: {problem}")
    if importlib.util.find_spec("ldnet_allennlp") is None:
        sys.exit(
            f"ldnet-tag: {model!r} is not a folder that allennlp ldnet-export wrote, and tagging "
            "anything else needs the full install (ldnet_allennlp, with torch and AllenNLP)."
        )
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "ldnet_allennlp", "ldnet-tag", *argv])


if __name__ == "__main__":
    main()
