"""The `allennlp ldnet-tag` subcommand."""

from ldnet_allennlp.tagging.commands.ldnet_tag import LdnetTag, mark_spans  # noqa: F401
