from ldnet_allennlp.tagging.dataset_readers.conll import (  # noqa: F401
    ValidatingConll2000DatasetReader,
    ValidatingConll2003DatasetReader,
)
