"""The `allennlp ldnet-export` subcommand."""

from ldnet_allennlp.onnx_export.commands.ldnet_export import (  # noqa: F401
    LdnetExport,
    export_from_args,
)
