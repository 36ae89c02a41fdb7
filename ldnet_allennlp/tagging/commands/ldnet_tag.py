"""
`allennlp ldnet-tag [--model ner] "a sentence" ...`: tags raw sentences with a shipped tagger
(`pretrained/MANIFEST.json`, by name) or any tagger archive, and prints each sentence with its
spans marked, e.g. `Chancellor [Helmut Kohl]PER met [Jacques Chirac]PER in [Bonn]LOC .`
With no sentence on the command line, it reads one sentence per line from standard input.
"""

import argparse
import sys
from typing import Any, Dict, List, Sequence

from allennlp.commands.subcommand import Subcommand


def mark_spans(tokens: Sequence[str], spans: List[Dict[str, Any]]) -> str:
    """
    `tokens` joined by spaces, each span (`start`, `end` inclusive, `type`; the `ldnet_tagger`
    predictor's output) in brackets followed by its type: `[Helmut Kohl]PER`.
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


@Subcommand.register("ldnet-tag")
class LdnetTag(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Tag raw sentences with a shipped tagger (by name, e.g. ner or chunk) or a tagger "
            "archive, and print them with their spans marked."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "sentences", nargs="*", help="raw sentences (default: one per line from stdin)"
        )
        subparser.add_argument(
            "--model",
            default="ner",
            help="a name from pretrained/MANIFEST.json, or a tagger archive's path (default: ner)",
        )
        subparser.set_defaults(func=tag_from_args)
        return subparser


def tag_from_args(args: argparse.Namespace) -> None:
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from ldnet_allennlp.pretrained import load_pretrained, manifest

    if args.model in manifest():
        predictor = load_pretrained(args.model)
    else:
        predictor = Predictor.from_archive(load_archive(args.model), "ldnet_tagger")
    sentences = args.sentences or [line.strip() for line in sys.stdin if line.strip()]
    for output in predictor.predict_batch_json([{"sentence": s} for s in sentences]):
        print(mark_spans(output["tokens"], output["spans"]))
