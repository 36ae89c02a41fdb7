"""The `allennlp ldnet-serve` subcommand."""

from ldnet_allennlp.serving.commands.ldnet_serve import LdnetServe  # noqa: F401
