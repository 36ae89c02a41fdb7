"""The `allennlp ldnet-export-word-vectors` subcommand."""

from ldnet_allennlp.lm.commands.ldnet_export_word_vectors import (  # noqa: F401
    ExportWordVectors,
    export_word_vectors_from_args,
)
