"""
The transfer-set step of the distillation pipeline alone: the teacher's labelling speed in
`ldnet-distill-transfer-set`, the same rows labelled in batches of 64 in the order they are
generated (each example's original, then its augmented samples) and in the order it writes
them (`length_sorted` within windows of `SORT_WINDOW_BATCHES` batches).

    python -m benchmarks transfer_set --rows 1280 --rounds 5

The rows come from the first examples of `--train` (n_iter 20, seed 13, as the distillation
study builds them), cut to `--rows`. `distillation_pipeline.speed` times both orders (median
rows/s of interleaved rounds at `--threads`); the largest difference between the two orders'
logits per row must stay float noise (padding must not change them).
"""

import argparse
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT
from benchmarks.harness.results import run_record, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_most, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies.distillation_pipeline import speed as timed_speed

BATCH_SIZE = 64
# padding must not change a row's logits: the most the two orders may differ (float32 noise)
LOGIT_TOLERANCE = 1e-4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add, run = parser.add_argument, ROOT / "runs" / "distillation_sst2_all"
    add("--teacher", default=str(run / "sst2_teacher" / "model.tar.gz"))
    add("--train", default=str(run / "data" / "sst2" / "train.tsv"))
    add("--rows", type=int, default=1280)
    add("--rounds", type=int, default=MIN_ROUNDS)
    add("--threads", type=int, default=1)


def speed(args: argparse.Namespace) -> None:
    """Times both orders of the same rows and writes the results file."""
    import torch
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401
    from ldnet_allennlp.distillation.classification import transfer_set
    from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
    from ldnet_allennlp.distillation.transfer_set import SORT_WINDOW_BATCHES

    archive = load_archive(args.teacher)
    teacher, reader = archive.model.eval(), archive.validation_dataset_reader
    examples = []
    for _, texts, label in reader.read_examples(args.train):
        examples.append((texts, label))
        if len(examples) * 21 >= 2 * args.rows:  # enough rows after dropping duplicates
            break
    rows = transfer_set.transfer_set_rows(examples, AugmentationRules(), seed=13)[: args.rows]
    if len(rows) < args.rows:
        raise SystemExit(f"only {len(rows)} rows from {len(examples)} examples")
    window = SORT_WINDOW_BATCHES * BATCH_SIZE
    orders = {"generated": rows, "length_sorted": transfer_set.length_sorted(rows, window)}
    logits: Dict[str, Any] = {}

    def label(name: str):  # the logits `(rows, num_labels)`, as the command computes them
        def run() -> None:
            batches = transfer_set.labelled_batches(teacher, reader, orders[name], BATCH_SIZE)
            logits[name] = torch.cat([batch_logits for _, batch_logits in batches])

        return run

    cases = {name: label(name) for name in orders}
    rate, timings = timed_speed(cases, dict.fromkeys(orders, len(rows)), args.rounds, args.threads)
    # the sorted order's logits back in generated order: padding must not change a row's logits
    position = {id(row): i for i, row in enumerate(orders["length_sorted"])}
    resorted = logits["length_sorted"][[position[id(row)] for row in rows]]
    teacher_file = Path(args.teacher).resolve()  # relative to the project when it lies in it
    if ROOT in teacher_file.parents:
        teacher_file = teacher_file.relative_to(ROOT)
    results = {
        "title": "Teacher labelling speed of distill-transfer-set: generated vs length-sorted rows",
        **run_record(),
        "teacher": str(teacher_file),
        "rows": len(rows),
        "examples": len(examples),
        "batch_size": BATCH_SIZE,
        "threads": args.threads,
        "rounds": args.rounds,
        "rows_per_sec_generated_order": round(rate["generated"], 1),
        "rows_per_sec_length_sorted": round(rate["length_sorted"], 1),
        "speedup_length_sorted": round(rate["length_sorted"] / rate["generated"], 2),
        "max_abs_logit_difference": float((resorted - logits["generated"]).abs().max()),
        "seconds_by_round": {n: [round(s, 2) for s in timings.values(n)] for n in orders},
    }
    write_results("transfer_set_labelling", results, replace=True)
    print({k: v for k, v in results.items() if k != "hardware"})


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Rows/s of both orders, the speed-up, and the logit difference the sorting makes."""
    figures = [
        ("teacher labelling, generated order (rows/s)", "rows_per_sec_generated_order"),
        ("teacher labelling, length-sorted (rows/s)", "rows_per_sec_length_sorted"),
        ("speed-up of length-sorted rows", "speedup_length_sorted"),
    ]
    lines = [headline(results, figure, key) for figure, key in figures]
    figure, key = "largest logit difference between the orders", "max_abs_logit_difference"
    return lines + [headline(results, figure, key, *at_most(LOGIT_TOLERANCE))]


STUDY = Study(
    name="transfer_set",
    description="Teacher labelling speed (ldnet-distill-transfer-set): generated vs sorted rows.",
    results_file="transfer_set_labelling.json",
    stages=[Stage("speed", speed, "time both orders of the same rows; writes the results file")],
    add_arguments=add_arguments,
    summary=summary,
)
