"""The `allennlp ldnet-tag` and `allennlp ldnet-tagging-transfer-set` subcommands."""

from ldnet_allennlp.tagging.commands.ldnet_tag import LdnetTag, mark_spans  # noqa: F401
from ldnet_allennlp.tagging.commands.ldnet_tagging_transfer_set import (  # noqa: F401
    TaggingTransferSet,
)
