"""
Pruned students: LD-Net taggers pruned to the layers of the shipped `ner_pruned` / `chunk_pruned`,
trained on the gold data plus a transfer set of unlabelled news sentences that an ensemble of
un-pruned taggers labelled with its CRF marginals (Tang et al.'s soft targets, for sequence
labelling), through the shared pipeline (`distillation_pipeline.py`).

    python -m benchmarks pruned_students --stage text
    python -m benchmarks pruned_students --stage transfer --task ner
    python -m benchmarks pruned_students --stage train --task ner --loss kl --sentences 40000
    python -m benchmarks pruned_students --stage test --task ner --run <run name>

Stages (each skips what exists; `train` resumes an interrupted run with `--recover`): `text`
(`scripts/prepare_transfer_text.py`: Reuters-21578 + BBC News, shuffled, so a prefix is a
random sample); `transfer` (`allennlp ldnet-tagging-transfer-set` with the task's teachers over
the first `--transfer-size` sentences); `train` (the student config from the shipped pruned
tagger's weights); `teacher` (dev F1 of the teachers); `test` (a chosen student's test F1, once,
after every choice); `speed`, `summary`, `ship` and `vocabulary` (`pruned_students_results.py`).
"""

import argparse

from benchmarks.harness.study import Stage, Study
from benchmarks.studies import pruned_students_results as figures
from benchmarks.studies import pruned_students_runs as runs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--task", choices=sorted(runs.TASKS), default="ner")
    add("--lm-text", default=None, help="lm_text folder (default ../shared)")
    add("--transfer-size", type=int, default=40000)
    add("--loss", choices=["kl", "silver"], default="kl")
    add("--weight", type=float, default=1.0)
    add("--sentences", type=int, default=40000)
    add("--epochs", type=int, default=2)
    add("--lr", type=float, default=0.006)
    add("--seed", type=int, default=1)
    add("--run", nargs="+", default=[], help="student run names (stages test, speed, ship)")
    add("--rounds", type=int, default=5)
    add("--read-test", action="store_true", help="stage teacher: also the test F1 (once)")


STAGES = [
    Stage("text", runs.stage_text, "the news sentences of the transfer sets"),
    Stage("transfer", runs.stage_transfer, "teacher marginals over the first N sentences"),
    Stage("train", runs.stage_train, "one student run"),
    Stage("teacher", figures.stage_teacher, "dev F1 of the teachers and of their ensemble"),
    Stage("test", runs.stage_test, "test F1 of the chosen students, once"),
    Stage("speed", figures.stage_speed, "FLOPs/token and words/s, one interleaved run"),
    Stage("summary", figures.stage_summary, "the table and headline keys of the chosen setting"),
    Stage("ship", runs.stage_ship, "the chosen student as the shipped pruned tagger"),
    Stage("vocabulary", runs.stage_vocabulary, "shipped chunkers with a train vocabulary"),
]


STUDY = Study(
    name="pruned_students",
    description="Pruned LD-Net students distilled from an ensemble's CRF marginals.",
    results_file=runs.RESULTS,
    stages=STAGES,
    add_arguments=add_arguments,
    summary=figures.summary,
)
