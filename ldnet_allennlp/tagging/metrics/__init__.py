from ldnet_allennlp.tagging.metrics.span_f1 import DistributedSpanBasedF1Measure  # noqa: F401
