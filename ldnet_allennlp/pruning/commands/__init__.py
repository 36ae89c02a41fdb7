"""The `allennlp ldnet-prune` subcommand."""

from ldnet_allennlp.pruning.commands.ldnet_prune import LdnetPrune, prune_from_args  # noqa: F401
