"""
Teacher labelling speed of `distill-transfer-set` (issue 18): the same transfer-set rows
labelled in batches of 64 in the order they are generated (each example's original, then its
augmented samples: what the builder labelled before it sorted) and in the order it writes them
now (`length_sorted` within windows of `SORT_WINDOW_BATCHES` batches).

    python benchmarks/transfer_set_benchmark.py --rows 1280 --rounds 5

The rows come from the first examples of `--train` (n_iter 20, Tang et al.'s settings, as the
distillation benchmark builds them), cut to `--rows`, so that both orders label the same rows.
A warm-up round, then `--rounds` interleaved rounds with torch threads set to `--threads`; the
median rows/s of each order and their ratio; and the largest difference between the two orders'
logits per row (padding must not change them). Writes
`benchmarks/results/transfer_set_labelling.json`.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import ROOT, hardware, save_results  # noqa: E402

RESULTS = "transfer_set_labelling"
BATCH_SIZE = 64


def label(teacher, reader, rows) -> torch.Tensor:
    """The teacher's logits for `rows`, in batches of `BATCH_SIZE`, as distill-transfer-set
    computes them (`labelled_batches`)."""
    from ldnet_allennlp.distillation.transfer_set import labelled_batches

    return torch.cat([logits for _, logits in labelled_batches(teacher, reader, rows, BATCH_SIZE)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    run = ROOT / "runs" / "distillation_sst2_all"
    parser.add_argument("--teacher", default=str(run / "sst2_teacher" / "model.tar.gz"))
    parser.add_argument("--train", default=str(run / "data" / "sst2" / "train.tsv"))
    parser.add_argument("--rows", type=int, default=1280)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds: at least 5 (the median of >= 5 interleaved rounds)")
    torch.set_num_threads(args.threads)
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401
    from ldnet_allennlp.distillation.augmentation import AugmentationRules
    from ldnet_allennlp.distillation.transfer_set import (
        SORT_WINDOW_BATCHES,
        length_sorted,
        transfer_set_rows,
    )

    archive = load_archive(args.teacher)
    teacher, reader = archive.model.eval(), archive.validation_dataset_reader
    examples = []
    for _, texts, label_ in reader.read_examples(args.train):
        examples.append((texts, label_))
        if len(examples) * 21 >= 2 * args.rows:  # enough rows after dropping duplicates
            break
    rows = transfer_set_rows(examples, AugmentationRules(), seed=13)[: args.rows]
    if len(rows) < args.rows:
        raise SystemExit(f"only {len(rows)} rows from {len(examples)} examples")
    orders = {
        "generated": rows,
        "length_sorted": length_sorted(rows, SORT_WINDOW_BATCHES * BATCH_SIZE),
    }
    seconds = {name: [] for name in orders}
    logits = {}
    with torch.inference_mode():
        for round_ in range(args.rounds + 1):  # round 0 warms up and is not counted
            for name, ordered in orders.items():
                start = time.perf_counter()
                logits[name] = label(teacher, reader, ordered)
                if round_:
                    seconds[name].append(time.perf_counter() - start)
    # the sorted order's logits back in generated order: padding must not change a row's logits
    position = {id(row): i for i, row in enumerate(orders["length_sorted"])}
    resorted = logits["length_sorted"][[position[id(row)] for row in rows]]
    difference = float((resorted - logits["generated"]).abs().max())
    rate = {name: len(rows) / statistics.median(s) for name, s in seconds.items()}
    command = "python benchmarks/transfer_set_benchmark.py " + " ".join(sys.argv[1:])
    results = {
        "title": "Teacher labelling speed of distill-transfer-set: generated vs length-sorted "
        "rows (issue 18)",
        "command": command,
        "hardware": hardware(),
        "teacher": str(Path(args.teacher).resolve().relative_to(ROOT)),
        "rows": len(rows),
        "examples": len(examples),
        "batch_size": BATCH_SIZE,
        "threads": args.threads,
        "rounds": args.rounds,
        "rows_per_sec_generated_order": round(rate["generated"], 1),
        "rows_per_sec_length_sorted": round(rate["length_sorted"], 1),
        "speedup_length_sorted": round(rate["length_sorted"] / rate["generated"], 2),
        "max_abs_logit_difference": difference,
        "seconds_by_round": {name: [round(s, 2) for s in v] for name, v in seconds.items()},
        "summary": {
            "caption": "Rows/s of the teacher labelling the same transfer-set rows in batches of "
            f"{BATCH_SIZE}: in generated order and length-sorted (as distill-transfer-set writes "
            f"them); median of {args.rounds} interleaved rounds after a warm-up, "
            f"{args.threads} torch thread(s).",
            "columns": ["order", "rows/s", "speed-up"],
            "rows": [
                ["generated (before)", round(rate["generated"], 1), 1.0],
                [
                    "length-sorted (now)",
                    round(rate["length_sorted"], 1),
                    round(rate["length_sorted"] / rate["generated"], 2),
                ],
            ],
        },
    }
    save_results(RESULTS, results)
    print({k: v for k, v in results.items() if k not in ("summary", "hardware")})


if __name__ == "__main__":
    main()
