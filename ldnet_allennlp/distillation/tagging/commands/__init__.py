"""The `allennlp ldnet-tagging-transfer-set` subcommand."""

from ldnet_allennlp.distillation.tagging.commands.ldnet_tagging_transfer_set import (  # noqa: F401
    TaggingTransferSet,
)
