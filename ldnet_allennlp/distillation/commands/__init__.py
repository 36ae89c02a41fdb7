from ldnet_allennlp.distillation.commands.transfer_set import (  # noqa: F401
    BuildTransferSet,
    build_transfer_set,
)
