"""The `allennlp ldnet-distill-transfer-set` subcommand (and its deprecated old name)."""

from ldnet_allennlp.distillation.classification.commands.ldnet_distill_transfer_set import (  # noqa: F401
    BuildTransferSet,
    DeprecatedBuildTransferSet,
    build_transfer_set_from_args,
)
