"""
`allennlp ldnet-export model.tar.gz -o DIR`: a CRF tagger as an ONNX graph + JSON that
`ldnet_runtime` runs without torch or AllenNLP
(`ldnet_allennlp.onnx_export.exporter.export_tagger`).
"""

import argparse

from allennlp.commands.subcommand import Subcommand


@Subcommand.register("ldnet-export")
class LdnetExport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Export a CRF tagger (e.g. a pruned LD-Net tagger) as an ONNX graph plus its "
            "vocabularies, tag set and CRF as JSON, for ldnet_runtime: tagging with numpy and "
            "onnxruntime, without torch or AllenNLP, with the same tags."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "archive_file",
            type=str,
            help="the tagger's model.tar.gz, or pretrained:<name> for a shipped one",
        )
        subparser.add_argument(
            "-o",
            "--output-dir",
            type=str,
            required=True,
            help="the folder to write (new, or empty)",
        )
        subparser.set_defaults(func=export_from_args)
        return subparser


def export_from_args(args: argparse.Namespace) -> None:
    from ldnet_allennlp.onnx_export.exporter import export_tagger

    report = export_tagger(args.archive_file, args.output_dir)
    inputs = ", ".join(f"{name} ({kind})" for name, kind in report.inputs.items())
    print(f"inputs: {inputs}; {report.num_tags} tags")
    print(
        f"checked against AllenNLP on {report.check_sentences} sentences: same tags, emissions "
        f"within {report.max_abs_logit_difference:.2g}"
    )
    print(
        f"wrote {report.output_dir} ({report.total_bytes / 1e6:.1f} MB, graph "
        f"{report.graph_bytes / 1e6:.1f} MB) in {report.seconds:.1f} s"
    )
    print(
        'tag with: python -c "from ldnet_runtime import Tagger; '
        f"print(Tagger('{report.output_dir}').tag('Helmut Kohl met Jacques Chirac in Bonn.'))\""
    )
