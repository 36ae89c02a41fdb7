"""
`allennlp ldnet-distill-transfer-set`: build Tang et al.'s transfer set from a training file and
a fine-tuned teacher archive (`build_transfer_set` of
`ldnet_allennlp.distillation.classification.transfer_set`).

    allennlp ldnet-distill-transfer-set runs/teacher/model.tar.gz \\
        "$SST2_TRAIN_DATA_PATH" runs/transfer/sst2_aug.jsonl --n-iter 20 --seed 13

`allennlp distill-transfer-set`, a deprecated name without the `ldnet-` prefix of this package's
subcommands, still works: it prints a deprecation warning, then does the same.
"""

import argparse
import os
import sys
import warnings

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
from ldnet_allennlp.distillation.classification.transfer_set import (
    DEFAULT_SPACY_MODEL,
    build_transfer_set,
)

OLD_NAME = "distill-transfer-set"
NAME = "ldnet-distill-transfer-set"
DESCRIPTION = (
    "Build a Tang et al. (2019) transfer set: the training examples plus augmented copies "
    "(masking, POS-guided replacement, n-gram sampling), labelled with a teacher's logits. "
    "Resumable: re-run the same command to continue an interrupted run."
)


@Subcommand.register(NAME)
class BuildTransferSet(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return self._add_arguments(parser, DESCRIPTION, build_transfer_set_from_args)

    def _add_arguments(
        self, parser: argparse._SubParsersAction, description: str, func
    ) -> argparse.ArgumentParser:
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument("archive_file", help="the fine-tuned teacher's model.tar.gz")
        subparser.add_argument(
            "input_file", help="training file, read with the teacher archive's dataset reader"
        )
        subparser.add_argument("output_file", help="transfer set to write (JSON lines)")
        subparser.add_argument(
            "--n-iter", type=int, default=20, help="augmented copies per example"
        )
        subparser.add_argument("--p-mask", type=float, default=0.1, help="masking probability")
        subparser.add_argument("--p-pos", type=float, default=0.1, help="POS replacement prob.")
        subparser.add_argument("--p-ng", type=float, default=0.25, help="n-gram sampling prob.")
        subparser.add_argument("--mask-token", default="[MASK]", help="token for masked words")
        subparser.add_argument("--seed", type=int, default=13)
        subparser.add_argument("--batch-size", type=int, default=64, help="teacher batch size")
        subparser.add_argument(
            "--max-examples", type=int, default=None, help="use only the first N examples"
        )
        subparser.add_argument("--spacy-model", default=DEFAULT_SPACY_MODEL)
        subparser.add_argument("--cuda-device", type=int, default=-1)
        subparser.set_defaults(func=func)
        return subparser


@Subcommand.register(OLD_NAME)
class DeprecatedBuildTransferSet(BuildTransferSet):
    """`distill-transfer-set`: `ldnet-distill-transfer-set` under its old name, with a warning."""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = f"Deprecated: use `allennlp {NAME}`. " + DESCRIPTION
        return self._add_arguments(parser, description, build_transfer_set_under_old_name)


def build_transfer_set_under_old_name(args: argparse.Namespace) -> None:
    """`build_transfer_set_from_args`, after a deprecation warning (stderr and `warnings`)."""
    message = f"`allennlp {OLD_NAME}` is deprecated and will be removed; use `allennlp {NAME}`."
    print(f"Warning: {message}", file=sys.stderr)
    warnings.warn(message, DeprecationWarning)
    build_transfer_set_from_args(args)


def build_transfer_set_from_args(args: argparse.Namespace) -> None:
    try:
        rules = AugmentationRules(
            p_mask=args.p_mask,
            p_pos=args.p_pos,
            p_ng=args.p_ng,
            n_iter=args.n_iter,
            mask_token=args.mask_token,
        )
    except ValueError as error:  # e.g. "n_iter must be >= 0, got -1"
        raise ConfigurationError(f"{NAME}: {error}") from error
    archive = load_archive(args.archive_file, cuda_device=args.cuda_device)
    rows = build_transfer_set(
        archive.model,
        archive.validation_dataset_reader,
        args.input_file,
        args.output_file,
        rules,
        seed=args.seed,
        batch_size=args.batch_size,
        max_examples=args.max_examples,
        spacy_model=args.spacy_model,
        teacher_name=os.path.abspath(args.archive_file),
    )
    print(f"Wrote {rows} transfer-set rows to {args.output_file}")
