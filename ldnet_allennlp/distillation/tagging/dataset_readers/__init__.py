from ldnet_allennlp.distillation.tagging.dataset_readers.tagging_distillation import (  # noqa: F401
    TaggingDistillationReader,
)
