"""
`allennlp ldnet-tagging-transfer-set`: label unlabelled sentences with the CRF posterior
marginals of one tagger or the average of several (`CrfEnsembleTeacher`), for distilling them
into a student tagger (`ldnet_allennlp.distillation.tagging.transfer_set`).

    allennlp ldnet-tagging-transfer-set pretrained:ner pretrained/teachers/ner_seed2.tar.gz \\
        --input runs/transfer/news.txt --output runs/transfer/ner_news.jsonl

Resumable: re-run the same command to continue an interrupted run (same bytes at the end).
"""

import argparse
import json

import torch
from allennlp.commands.subcommand import Subcommand

from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher
from ldnet_allennlp.distillation.tagging.transfer_set import build_tagging_transfer_set

NAME = "ldnet-tagging-transfer-set"
DESCRIPTION = (
    "Label unlabelled sentences (one per line, tokens separated by spaces) with the averaged CRF "
    "posterior marginals of one or more tagger archives and a silver tag sequence, as JSON lines "
    "for a distilled student tagger. Resumable: re-run the same command to continue."
)


@Subcommand.register(NAME)
class TaggingTransferSet(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = parser.add_parser(self.name, description=DESCRIPTION, help=DESCRIPTION)
        subparser.add_argument(
            "archives", nargs="+", help="teacher tagger archives (or pretrained:<name>)"
        )
        subparser.add_argument("--input", required=True, help="sentences, one per line")
        subparser.add_argument("--output", required=True, help="transfer set to write (JSONL)")
        subparser.add_argument("--batch-size", type=int, default=32)
        subparser.add_argument("--max-sentences", type=int, default=None)
        subparser.add_argument(
            "--min-probability",
            type=float,
            default=1e-3,
            help="marginals below this are not written (the reader renormalises)",
        )
        subparser.add_argument(
            "--threads", type=int, default=None, help="torch threads (default: torch's own)"
        )
        subparser.add_argument(
            "--cuda-device", type=int, default=-1, help="the GPU that runs the teachers (-1: CPU)"
        )
        subparser.set_defaults(func=_run)
        return subparser


def _run(args: argparse.Namespace) -> None:
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    teacher = CrfEnsembleTeacher(args.archives, cuda_device=args.cuda_device)
    summary = build_tagging_transfer_set(
        teacher,
        args.input,
        args.output,
        teacher_names=args.archives,
        batch_size=args.batch_size,
        max_sentences=args.max_sentences,
        min_probability=args.min_probability,
    )
    print(json.dumps(summary))
