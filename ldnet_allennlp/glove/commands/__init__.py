"""The `allennlp ldnet-glove` subcommand."""

from ldnet_allennlp.glove.commands.ldnet_glove import (  # noqa: F401
    LdnetGlove,
    write_glove_from_args,
)
