"""The `allennlp ldnet-export` subcommand."""

from ldnet_allennlp.export.commands.ldnet_export import LdnetExport, export_from_args  # noqa: F401
