from ldnet_allennlp.onnx_export.commands import LdnetExport  # noqa: F401
