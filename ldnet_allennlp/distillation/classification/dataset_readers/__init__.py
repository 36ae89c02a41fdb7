from ldnet_allennlp.distillation.classification.dataset_readers.distillation_readers import (  # noqa: F401
    DistillationReader,
    DistillationTsvReader,
    TransferSetReader,
)
