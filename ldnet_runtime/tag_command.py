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
  same arguments (`ldnet_allennlp/tagging/commands/ldnet_tag.py`, the full install).
"""

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ldnet_runtime.shipped_exports import (
    cached_export,
    export_dir_of,
    is_export_dir,
    is_shipped_name,
)

DEFAULT_MODEL = "ner_pruned"
FULL_MODEL = "ner"
HEAVY_MODULES = ("torch",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """
    The arguments of `ldnet-tag`, shared with `allennlp ldnet-tag`.

    # Parameters

    parser : `argparse.ArgumentParser`
        The parser to add them to.
    """
    parser.add_argument(
        "sentences", nargs="*", help="raw sentences (default: one per line from stdin)"
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"a shipped tagger's name from pretrained/MANIFEST.json (default: {DEFAULT_MODEL}, "
        "the pruned NER tagger), a tagger archive's path, or a folder that allennlp "
        "ldnet-export wrote (tagged without torch or AllenNLP)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help=f"the un-pruned shipped tagger ({FULL_MODEL}) instead of {DEFAULT_MODEL}",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show AllenNLP's INFO log on stderr as well"
    )
    parser.add_argument(
        "--cache-export",
        action="store_true",
        help="export the shipped tagger once into the runtime's cache (LDNET_EXPORT_CACHE, "
        "default ~/.cache/ldnet_runtime/exports), then tag with the runtime; later calls by "
        "name use that export (without torch) whenever it is there",
    )


def chosen_model(given: Optional[str], full: bool, given_as: str = "--model") -> str:
    """
    The tagger a command line names: `given`, else the default shipped tagger (`full`: the
    un-pruned one). `ldnet-tag` and `ldnet-serve` both choose by this rule.

    # Parameters

    given : `str`, optional
        The model the user named, if any.
    full : `bool`
        `--full`.
    given_as : `str`, optional (default = `"--model"`)
        How the error message calls `given`.

    # Returns

    A shipped tagger's name, an archive's path or an export folder's path.

    # Raises

    `ValueError` when both `given` and `full` are set.
    """
    if given is not None:
        if full:
            raise ValueError(
                f"--full names the un-pruned shipped tagger: give it or {given_as}, not both"
            )
        return given
    return FULL_MODEL if full else DEFAULT_MODEL


def model_of(args: argparse.Namespace) -> str:
    """
    The model `args` name: `--model`, or the default shipped tagger (`--full`: the un-pruned one).

    # Parameters

    args : `argparse.Namespace`
        Parsed `add_arguments` arguments (`full` may be missing).

    # Returns

    A shipped tagger's name, an archive's path or an export folder's path.
    """
    return chosen_model(args.model, getattr(args, "full", False))


def mark_spans(tokens: Sequence[str], spans: List[Dict[str, Any]]) -> str:
    """
    `tokens` joined by spaces, each span (`start`, `end` inclusive, `type`; the `ldnet_tagger`
    predictor's output) in brackets followed by its type: `[Helmut Kohl]PER`.

    # Parameters

    tokens : `Sequence[str]`
        The sentence's tokens.
    spans : `List[Dict[str, Any]]`
        Its spans, as the predictor gives them.

    # Returns

    The marked sentence.
    """
    starts = {span["start"]: span for span in spans}
    ends = {span["end"]: span for span in spans}
    words = []
    for i, token in enumerate(tokens):
        word = token
        if i in starts:
            word = "[" + word
        if i in ends:
            word = word + "]" + ends[i]["type"]
        words.append(word)
    return " ".join(words)


def sentences_of(args: argparse.Namespace) -> List[str]:
    """The sentences of the command line, else the non-blank lines of standard input."""
    return args.sentences or [line.strip() for line in sys.stdin if line.strip()]


def tag_with_runtime(export_dir: str, sentences: List[str]) -> None:
    """
    Prints each of `sentences` tagged by the exported tagger in `export_dir`, spans marked.

    # Parameters

    export_dir : `str`
        The folder `allennlp ldnet-export` wrote.
    sentences : `List[str]`
        Raw sentences.
    """
    from ldnet_runtime.exported_tagger import Tagger

    tagger = Tagger(export_dir)
    for output in tagger.predict_batch_json([{"sentence": s} for s in sentences]):
        print(mark_spans(output["tokens"], output["spans"]))


def runtime_folder(model: str, cache_export: bool = False) -> Optional[Path]:
    """
    The export folder the runtime tags `model` with: `model` itself when `allennlp ldnet-export`
    wrote it; for a shipped tagger's name, its export in the runtime's cache (made first with
    `cache_export`); else `None` (AllenNLP tags it).

    # Parameters

    model : `str`
        What `model_of` gives.
    cache_export : `bool`, optional (default = `False`)
        Export a shipped tagger into the cache when it is not there yet.
    """
    if is_export_dir(model):
        return Path(model)
    if cache_export and is_shipped_name(model):
        return export_dir_of(model, quiet=True)
    return cached_export(model)


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
    if importlib.util.find_spec("ldnet_allennlp") is None:
        sys.exit(
            f"ldnet-tag: {model!r} is not a folder that allennlp ldnet-export wrote, and tagging "
            "anything else needs the full install (ldnet_allennlp, with torch and AllenNLP)."
        )
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "ldnet_allennlp", "ldnet-tag", *argv])


if __name__ == "__main__":
    main()
