"""
`allennlp ldnet-export-word-vectors lm.tar.gz vectors.txt [--lowercase]`: a dense LM's input word
embeddings as a GloVe-format text file
(`ldnet_allennlp.lm.word_vector_file.write_word_vector_file`).
"""

import argparse

from allennlp.commands.subcommand import Subcommand

from ldnet_allennlp.lm.word_vector_file import write_word_vector_file


@Subcommand.register("ldnet-export-word-vectors")
class ExportWordVectors(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Write a dense LM's input word embeddings as a GloVe-format text file, for an "
            "`embedding` token embedder's `pretrained_file`."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument("archive_file", type=str, help="a dense_language_model archive")
        subparser.add_argument("output_file", type=str, help="where to write the vectors")
        subparser.add_argument(
            "--lowercase",
            action="store_true",
            help="key the vectors by lowercased word (most frequent cased variant wins)",
        )
        subparser.set_defaults(func=export_word_vectors_from_args)
        return subparser


def export_word_vectors_from_args(args: argparse.Namespace) -> None:
    count, dim = write_word_vector_file(args.archive_file, args.output_file, args.lowercase)
    print(f"wrote {count} {dim}-d word vectors to {args.output_file}")
