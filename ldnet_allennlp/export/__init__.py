from ldnet_allennlp.export.commands import LdnetExport  # noqa: F401
