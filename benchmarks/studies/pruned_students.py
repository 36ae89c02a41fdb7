"""
Pruned students (issue 33): LD-Net taggers pruned to the layers of the shipped `ner_pruned` /
`chunk_pruned`, trained on the gold data plus a transfer set of unlabelled news sentences that
an ensemble of un-pruned taggers labelled with its CRF marginals (Tang et al.'s soft targets, for
sequence labelling).

    python -m benchmarks pruned_students --stage text
    python -m benchmarks pruned_students --stage transfer --task ner
    python -m benchmarks pruned_students --stage train --task ner --loss kl --sentences 40000
    python -m benchmarks pruned_students --stage train --task ner --loss silver --sentences 40000
    python -m benchmarks pruned_students --stage test --task ner --run <run name>
    python -m benchmarks pruned_students --stage speed

Stages (each skips what exists; `train` resumes an interrupted run with `--recover`):
1. `text`: `scripts/prepare_transfer_text.py` -> runs/transfer/news.txt (Reuters-21578 + BBC News,
   shuffled; a prefix is a random sample).
2. `transfer`: `allennlp ldnet-tagging-transfer-set` with the task's teachers (the shipped
   un-pruned tagger and the `pretrained/teachers/` seeds) over the first `--transfer-size`
   sentences; records the teacher's words/s and seconds.
3. `train`: the student config (`training_configs/tagging/student/<task>_pruned_student.jsonnet`)
   from the shipped pruned tagger's weights, with `--loss`, `--weight`, `--sentences` (of the
   transfer set), `--epochs`, `--seed`; records dev F1 per epoch and the CPU seconds.
4. `test`: `allennlp evaluate` of a chosen student on the test file, once, after every choice.
5. `speed`: FLOPs per token and words/s of teachers, taggers and students in one interleaved run.
"""

import argparse

from benchmarks.harness.study import Stage, Study
from benchmarks.studies.pruned_students_results import (
    stage_speed,
    stage_summary,
    stage_teacher,
    summary,
)
from benchmarks.studies.pruned_students_runs import (
    RESULTS,
    TASKS,
    stage_test,
    stage_text,
    stage_train,
    stage_transfer,
    stage_ship,
    stage_vocabulary,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    parser.add_argument("--lm-text", default=None, help="lm_text folder (default ../shared)")
    parser.add_argument("--transfer-size", type=int, default=40000)
    parser.add_argument("--loss", choices=["kl", "silver"], default="kl")
    parser.add_argument("--weight", type=float, default=1.0)
    parser.add_argument("--sentences", type=int, default=40000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.006)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--run", nargs="+", default=[], help="student run names (stages test, speed, ship)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--read-test", action="store_true", help="stage teacher: also the test F1 (once)"
    )


STUDY = Study(
    name="pruned_students",
    description="issue 33: pruned LD-Net students distilled from an ensemble's CRF marginals",
    results_file=RESULTS,
    stages=[
        Stage("text", stage_text, "the news sentences of the transfer sets"),
        Stage("transfer", stage_transfer, "teacher marginals over the first N sentences"),
        Stage("train", stage_train, "one student run"),
        Stage("teacher", stage_teacher, "dev F1 of the teachers and of their ensemble"),
        Stage("test", stage_test, "test F1 of the chosen students, once"),
        Stage("speed", stage_speed, "FLOPs/token and words/s, one interleaved run"),
        Stage("summary", stage_summary, "the table and headline keys of the chosen setting"),
        Stage("ship", stage_ship, "the chosen student as the shipped pruned tagger"),
        Stage("vocabulary", stage_vocabulary, "item 5: shipped chunkers with a train vocabulary"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
