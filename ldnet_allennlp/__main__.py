"""
`ldnet-allennlp` (and `python -m ldnet_allennlp`): the `allennlp` command with this package
imported first, so that its subcommands (`ldnet-prune`, `ldnet-glove`, ...) and registered
components work from any working directory, with no `.allennlp_plugins` file and no
`--include-package ldnet_allennlp`.

Plain `allennlp` reads its plugins before it parses `--include-package`, so our subcommands are
only known to it where a plugins file names this package: `.allennlp_plugins` in the working
directory (the repository root has one) or AllenNLP's global file `~/.allennlp/plugins`.
"""


def run() -> None:
    # AllenNLP's own entry point module first: it sets up logging as `allennlp` does
    from allennlp import __main__ as allennlp_main
    from allennlp.common.util import import_module_and_submodules

    import_module_and_submodules("ldnet_allennlp")
    allennlp_main.run()


if __name__ == "__main__":
    run()
