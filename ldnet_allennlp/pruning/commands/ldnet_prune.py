"""
`allennlp ldnet-prune model.tar.gz -o pruned.tar.gz [--report-file report.json] [--fp16]
[--reference-lms] [--keep-all-layers]`:
LD-Net's final pruning step (`ldnet_allennlp.pruning.cut_layers.prune_archive`) as an AllenNLP
subcommand.
"""

import argparse
import json
import logging

from allennlp.commands.subcommand import Subcommand

from ldnet_allennlp.pruning.cut_layers import prune_archive

logger = logging.getLogger(__name__)


@Subcommand.register("ldnet-prune")
class LdnetPrune(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Physically prune an LD-Net tagger: remove the LM layers whose layer mask is 0 and "
            "write an ordinary, smaller archive that `allennlp predict` / `evaluate` load as is."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument("archive_file", type=str, help="the trained (masked) tagger")
        subparser.add_argument(
            "-o", "--output-file", type=str, required=True, help="where to write the pruned archive"
        )
        subparser.add_argument(
            "--report-file", type=str, default=None, help="also write the report as JSON here"
        )
        subparser.add_argument(
            "--fp16",
            action="store_true",
            help="store the weights in half precision (half the size; check the F1 it gives)",
        )
        subparser.add_argument(
            "--reference-lms",
            action="store_true",
            help="leave the frozen LM weights out of the archive: it refers to the LM archives "
            "(pretrained:<name> for the shipped LMs) and checks their sha256 when loaded",
        )
        subparser.add_argument(
            "--keep-all-layers",
            action="store_true",
            help="remove no layer (ignore the masks): only --fp16 / --reference-lms change the "
            "tagger, e.g. to ship an un-pruned tagger small",
        )
        subparser.set_defaults(func=prune_from_args)
        return subparser


def prune_from_args(args: argparse.Namespace) -> None:
    report = prune_archive(
        args.archive_file,
        args.output_file,
        fp16=args.fp16,
        reference_lms=args.reference_lms,
        keep_all_layers=args.keep_all_layers,
    )
    for name, before in report.kept_layers_before.items():
        after = report.kept_layers_after[name]
        for direction in ("forward", "backward"):
            print(f"{name} {direction} LM: layers {before[direction]} -> kept {after[direction]}")
    print(f"parameters: {report.parameters_before:,} -> {report.parameters_after:,}")
    print(
        f"FLOPs per token: {report.flops_per_token_before:,.0f} -> "
        f"{report.flops_per_token_after:,.0f} "
        f"({report.flops_per_token_before / max(report.flops_per_token_after, 1):.1f}x fewer)"
    )
    print(f"wrote {args.output_file}")
    if args.report_file:
        with open(args.report_file, "w") as report_file:
            json.dump(report.as_dict(), report_file, indent=2)
