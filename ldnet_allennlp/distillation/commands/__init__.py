"""The `allennlp distill-transfer-set` subcommand."""

from ldnet_allennlp.distillation.commands.distill_transfer_set import (  # noqa: F401
    BuildTransferSet,
    build_transfer_set_from_args,
)
