"""
What the two tagging commands share: `ldnet-tag` (`tag_command.py`, this package's console
script) and `allennlp ldnet-tag` (`ldnet_allennlp/tagging/commands/ldnet_tag.py`, the full
install) take the same arguments (`add_arguments`), choose the same tagger by default
(`DEFAULT_MODEL`, `FULL_MODEL`, `chosen_model`; `allennlp ldnet-serve` chooses by the same rule),
decide alike whether the runtime tags it (`runtime_folder`) and whether it names a tagger at
all (`model_problem`), read the same sentences
(`sentences_of`) and print them alike (`mark_spans`, `tag_with_runtime`).

It is no command itself and imports neither torch nor AllenNLP.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ldnet_runtime.shipped_exports import (
    cached_export,
    export_dir_of,
    is_export_dir,
    is_shipped_name,
    shipped_kinds,
)
from ldnet_runtime.unicode_text import lone_surrogate

DEFAULT_MODEL = "ner_pruned"
FULL_MODEL = "ner"


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


def model_problem(model: str) -> Optional[str]:
    """
    Why `model` (what `model_of` gives) names no tagger, or `None` where it may: an existing
    file or folder, a URL (AllenNLP's `cached_path` reads those), a name that
    `pretrained/MANIFEST.json` lists as a tagger, or any name where no manifest is found (the
    runtime's cache may hold its export). A missing path, or a name the manifest lacks or lists
    as something else, gets a sentence saying so and what to give.

    # Parameters

    model : `str`
        A shipped tagger's name, an archive's path or an export folder's path.
    """
    if Path(model).exists() or "://" in model:
        return None
    what = "a tagger archive, a folder that allennlp ldnet-export wrote, or a shipped tagger's name"
    if not is_shipped_name(model):
        return f"{model!r} does not exist: give {what}."
    kinds = shipped_kinds()
    if kinds is None or kinds.get(model) == "tagger":
        return None
    taggers = sorted(name for name, kind in kinds.items() if kind == "tagger")
    if model in kinds:
        return f"{model!r} is a shipped {kinds[model]}, not a tagger; the taggers are {taggers}."
    return (
        f"{model!r} is no file or folder here and no shipped tagger (pretrained/MANIFEST.json "
        f"lists the taggers {taggers}): give {what}."
    )


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
    """
    The sentences of the command line, else the non-blank lines of standard input. A sentence
    with bytes that are not UTF-8 (which Python reads as lone surrogates, U+DC80 to U+DCFF) is a
    `ValueError` naming its argument or line.
    """
    if args.sentences:
        return [utf8_text(s, f"argument {i + 1}") for i, s in enumerate(args.sentences)]
    lines = [(number, line.strip()) for number, line in enumerate(sys.stdin, 1)]
    return [utf8_text(line, f"line {number} of standard input") for number, line in lines if line]


def utf8_text(text: str, where: str) -> str:
    """`text`, unless it holds a lone surrogate: a `ValueError` naming `where`."""
    problem = lone_surrogate([text], item=None)
    if problem:
        raise ValueError(
            f"{where} is not UTF-8 text: {problem}, which is how Python reads a byte that is not "
            "UTF-8; give the text in UTF-8"
        )
    return text


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
