"""
The transfer-set step of the distillation pipeline alone: the teacher's labelling speed in
`ldnet-distill-transfer-set`, the same rows labelled in batches of 64 in the order they are
generated (each example's original, then its augmented samples) and in the order it writes
them (`length_sorted` within windows of `SORT_WINDOW_BATCHES` batches).

    python -m benchmarks transfer_set --rows 1280 --rounds 5

The rows come from the first examples of `--train` (n_iter 20, as the distillation study builds
them), cut to `--rows`. `distillation_pipeline.speed` times both orders (median rows/s of
interleaved rounds at `--threads`); the largest difference between the two orders' logits per
row must stay float noise (padding must not change them).
"""

import argparse
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, utc_date, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_most, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies.distillation_pipeline import speed as timed_speed

RESULTS = "transfer_set_labelling"
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


def label(teacher, reader, rows):
    """The teacher's logits for `rows`, `(len(rows), num_labels)`, in batches of `BATCH_SIZE`,
    as ldnet-distill-transfer-set computes them (`labelled_batches`)."""
    import torch

    from ldnet_allennlp.distillation.classification.transfer_set import labelled_batches

    return torch.cat([logits for _, logits in labelled_batches(teacher, reader, rows, BATCH_SIZE)])


def transfer_rows(reader, train: str, count: int):
    """The first `count` rows of the transfer set built (n_iter 20, seed 13) from the first
    examples of `train`, and how many examples that took."""
    from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
    from ldnet_allennlp.distillation.classification.transfer_set import transfer_set_rows

    examples = []
    for _, texts, label_ in reader.read_examples(train):
        examples.append((texts, label_))
        if len(examples) * 21 >= 2 * count:  # enough rows after dropping duplicates
            break
    rows = transfer_set_rows(examples, AugmentationRules(), seed=13)[:count]
    if len(rows) < count:
        raise SystemExit(f"only {len(rows)} rows from {len(examples)} examples")
    return rows, len(examples)


def speed(args: argparse.Namespace) -> None:
    """Times both orders and writes the results file."""
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401
    from ldnet_allennlp.distillation.classification.transfer_set import length_sorted
    from ldnet_allennlp.distillation.transfer_set import SORT_WINDOW_BATCHES

    if args.rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds: at least {MIN_ROUNDS} (the median of interleaved rounds)")
    archive = load_archive(args.teacher)
    teacher, reader = archive.model.eval(), archive.validation_dataset_reader
    rows, examples = transfer_rows(reader, args.train, args.rows)
    sorted_rows = length_sorted(rows, SORT_WINDOW_BATCHES * BATCH_SIZE)
    orders, logits = {"generated": rows, "length_sorted": sorted_rows}, {}

    def case(name: str):
        return lambda: logits.__setitem__(name, label(teacher, reader, orders[name]))

    work = {name: len(rows) for name in orders}
    rate, timings = timed_speed({n: case(n) for n in orders}, work, args.rounds, args.threads)
    # the sorted order's logits back in generated order: padding must not change a row's logits
    position = {id(row): i for i, row in enumerate(orders["length_sorted"])}
    resorted = logits["length_sorted"][[position[id(row)] for row in rows]]
    difference = float((resorted - logits["generated"]).abs().max())
    results = {
        "title": "Teacher labelling speed of distill-transfer-set: generated vs length-sorted rows",
        "command": command_line(),
        "date": utc_date(),
        "hardware": hardware(),
        "teacher": project_path(args.teacher),
        "rows": len(rows),
        "examples": examples,
        "batch_size": BATCH_SIZE,
        "threads": args.threads,
        "rounds": args.rounds,
        "rows_per_sec_generated_order": round(rate["generated"], 1),
        "rows_per_sec_length_sorted": round(rate["length_sorted"], 1),
        "speedup_length_sorted": round(rate["length_sorted"] / rate["generated"], 2),
        "max_abs_logit_difference": difference,
        "seconds_by_round": {n: [round(s, 2) for s in timings.values(n)] for n in orders},
    }
    results["summary"] = table(results)
    write_results(RESULTS, results, replace=True)
    print({k: v for k, v in results.items() if k not in ("summary", "hardware")})


def project_path(path: str) -> str:
    """`path` relative to the project root when it lies in it, else absolute."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT) if ROOT in resolved.parents else resolved)


def table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The results file's `summary` table (rows/s of each order and the speed-up)."""
    speedup = results["speedup_length_sorted"]
    return {
        "caption": "Rows/s of the teacher labelling the same transfer-set rows in batches of "
        f"{results['batch_size']}: in generated order and length-sorted (as "
        "distill-transfer-set writes them); median of "
        f"{results['rounds']} interleaved rounds after a warm-up, {results['threads']} torch "
        "thread(s).",
        "columns": ["order", "rows/s", "speed-up"],
        "rows": [["generated", results["rows_per_sec_generated_order"], 1.0]]
        + [["length-sorted (written)", results["rows_per_sec_length_sorted"], speedup]],
    }


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Rows/s of both orders, the speed-up, and the logit difference the sorting makes."""
    figures = [
        ("teacher labelling, generated order (rows/s)", "rows_per_sec_generated_order"),
        ("teacher labelling, length-sorted (rows/s)", "rows_per_sec_length_sorted"),
        ("speed-up of length-sorted rows", "speedup_length_sorted"),
    ]
    lines = [headline(results, figure, key) for figure, key in figures]
    figure = "largest logit difference between the orders"
    return lines + [
        headline(results, figure, "max_abs_logit_difference", *at_most(LOGIT_TOLERANCE))
    ]


STUDY = Study(
    name="transfer_set",
    description="Teacher labelling speed (ldnet-distill-transfer-set): generated vs sorted rows.",
    results_file="transfer_set_labelling.json",
    stages=[Stage("speed", speed, "time both orders of the same rows; writes the results file")],
    add_arguments=add_arguments,
    summary=summary,
)
