"""
`allennlp ldnet-tag ["a sentence" ...] [--model NAME|ARCHIVE|EXPORT_DIR] [--full] [--verbose]`:
tags raw sentences with a shipped tagger (`pretrained/MANIFEST.json`, by name; by default the
pruned `ner_pruned`, `--full` for the un-pruned `ner`), any tagger archive, or a folder that
`allennlp ldnet-export` wrote (tagged by `ldnet_runtime`), and prints each sentence with its
spans marked, e.g. `Chancellor [Helmut Kohl]PER met [Jacques Chirac]PER in [Bonn]LOC .`
With no sentence on the command line, it reads one sentence per line from standard input.
It prints nothing else: AllenNLP's INFO log only with `--verbose`
(`ldnet_allennlp/patches/command_line_logging.py`). Its arguments, default tagger, choice of
the runtime for an export folder and printing are `ldnet_runtime/tagging.py`'s, which the
runtime's `ldnet-tag` (`ldnet_runtime/tag_command.py`, no AllenNLP) shares; that command hands
every model but an export folder to this one, by `os.execv` of `python -m ldnet_allennlp
ldnet-tag`.

It does not need AllenNLP's plugins (allennlp-models' every module): from `ldnet-allennlp`,
they are not imported; `--include-package` still imports a package of one's own.
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from ldnet_runtime.tagging import (
    add_arguments,
    mark_spans,
    model_of,
    model_problem,
    runtime_folder,
    sentences_of,
    tag_with_runtime,
)


@Subcommand.register("ldnet-tag")
class LdnetTag(Subcommand):
    requires_plugins = False

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Tag raw sentences with a shipped tagger (by name; default ner_pruned, --full for "
            "ner), a tagger archive or an ldnet-export folder, and print them with their spans "
            "marked."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        add_arguments(subparser)
        subparser.add_argument(
            "--include-package",
            type=str,
            action="append",
            default=[],
            help="additional packages to include",
        )
        subparser.set_defaults(func=tag_from_args)
        return subparser


def tag_from_args(args: argparse.Namespace) -> None:
    """
    Prints the sentences of `args` tagged by the model it names, spans marked.

    # Parameters

    args : `argparse.Namespace`
        `sentences` and `model`; `full` optional.
    """
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from ldnet_allennlp.pretrained import load_pretrained, manifest

    try:
        model = model_of(args)
    except ValueError as error:
        raise ConfigurationError(str(error)) from error
    folder = runtime_folder(model, getattr(args, "cache_export", False))
    if folder is not None:
        tag_with_runtime(str(folder), sentences_of(args))
        return
    problem = model_problem(model)
    if problem is not None:
        raise ConfigurationError(problem)
    if model in manifest():
        predictor = load_pretrained(model)
    else:
        predictor = Predictor.from_archive(load_archive(model), "ldnet_tagger")
    sentences = sentences_of(args)
    for output in predictor.predict_batch_json([{"sentence": s} for s in sentences]):
        print(mark_spans(output["tokens"], output["spans"]))
