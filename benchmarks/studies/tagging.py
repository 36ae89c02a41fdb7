"""
LD-Net tagging on real data (issues 4 and 13): trains the no-LM baselines and the LD-Net taggers
on CoNLL-03 NER and CoNLL-00 chunking into `runs/tagging/<run>/`, scores the test sets with
`allennlp evaluate`, counts FLOPs per token, and writes `benchmarks/results/tagging.json`.

    python -m benchmarks tagging                                 # every run
    python -m benchmarks tagging --runs ner_vanilla chunk_vanilla --epochs 8
    python -m benchmarks tagging --runs ner_ldnet \\
        --forward-lm runs/lm_forward/model.tar.gz --backward-lm runs/lm_backward/model.tar.gz
    python -m benchmarks tagging --stage record --runs ner_ldnet   # = --skip-train

Stage `train` trains each of `--runs` (`harness.allennlp.train`: a finished run is skipped, an
interrupted one resumed with `--recover`, so the `--epochs` of a resumed run must be the one it
was started with; `--extend` continues a finished run to more epochs; `--finalize-partial`
archives the best checkpoint of a stopped run instead). Wall-clock is summed over all the
(resumed) training processes of a run (`train_wallclock_s`; where a process was killed with its
benchmark call, which then recorded nothing, AllenNLP's own epoch clock summed over the
processes, when that is larger). Stage `record` scores each run and merges its figures into the
JSON file (`tagging_results.write_results`, under a lock: several invocations may run at once,
one per run); with `--dev-only` (the recipe search of issue 13, or `--lm-label`, a study of other
LMs) only the dev F1 per epoch, never the test file.

LM fine-tuning on the task text (ELMo domain transfer): the `lm_finetune` study runs it end to
end. The earlier study of issue 4 (`lm_finetune`, snapshot LMs, Adam recipe) was run by hand with
the commands in training_configs/tagging/lm_finetune_{forward,backward}.jsonnet and ner_ldnet
trained into runs/tagging/ner_ldnet_lmft; `--lm-finetune-report` records it.

Pretrained word vectors: `*_lm_init` runs initialise their word embeddings from the forward LM's
(exported once with `allennlp ldnet-export-word-vectors --lowercase`); `*_glove` runs add GloVe
6B 50d. Keys (F1 in percent): conll03_test_f1_<tagger>, conll00_test_f1_<tagger>, and per run
`<run>.{test_f1, dev_f1, epochs_trained, best_epoch, train_wallclock_s, flops_per_token}`.
"""

import argparse
import json
import sys
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT
from benchmarks.harness.results import command_line
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline, lookup
from benchmarks.studies import tagging_runs as runs
from benchmarks.studies.tagging_results import FINAL_GOALS, run_key, table_index, write_results

COMMAND = (
    "python -m benchmarks tagging [--runs ...] [--epochs N] [--forward-lm ... --backward-lm ...]"
    " [--finalize-partial]"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    names = list(runs.RUN_SPECS)
    parser.add_argument("--runs", nargs="+", default=names, choices=names)
    parser.add_argument("--epochs", type=int, default=None, help="override trainer.num_epochs")
    parser.add_argument("--forward-lm", default=ROOT / "runs" / "lm_forward" / "model.tar.gz")
    parser.add_argument("--backward-lm", default=ROOT / "runs" / "lm_backward" / "model.tar.gz")
    parser.add_argument("--threads", type=int, default=1, help="OMP threads per training run")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="AllenNLP's random, numpy and torch seeds (default: AllenNLP's own); the run goes to "
        "runs/tagging/<run>_seed<N> and its results under that key",
    )
    parser.add_argument(
        "--lm-label",
        help="names the LMs given with --forward-lm/--backward-lm in a study of other LMs (with "
        "--dev-only): the run goes to runs/tagging/<run>_lm-<label>, recorded under that key",
    )
    parser.add_argument(
        "--skip-train", action="store_true", help="only evaluate trained runs (= --stage record)"
    )
    parser.add_argument(
        "--finalize-partial",
        action="store_true",
        help="archive the best checkpoint (best.th) of runs that were stopped before the end",
    )
    parser.add_argument(
        "--lm-finetune-report", action="store_true", help="also record the LM fine-tuning effect"
    )
    parser.add_argument(
        "--extend",
        action="store_true",
        help="continue a finished run to --epochs (resumed from its last checkpoint)",
    )
    parser.add_argument(
        "--ship",
        action="store_true",
        help="also write <run dir>/model_fp16.tar.gz, the tagger as pretrained/ ships it "
        "(fp16, LMs by reference), and record its test F1 (test_f1_fp16)",
    )
    parser.add_argument("--notes", help="free text for the report (what limited the runs)")
    parser.add_argument(
        "--dev-only",
        action="store_true",
        help="recipe search: record dev F1 per epoch under recipe_search.<run>, never read test",
    )


def checked(args: argparse.Namespace) -> None:
    """Refuses an `--lm-label` without `--dev-only` (a study's taggers are compared on dev; test
    F1 stays for the runs the results keys hold) or one that is not a plain name."""
    message = None
    if args.lm_label is not None and not args.dev_only:
        message = "--lm-label needs --dev-only"
    elif args.lm_label is not None and not args.lm_label.replace("_", "").isalnum():
        message = f"--lm-label {args.lm_label!r}: use letters, digits and '_'"
    if message:
        print(f"python -m benchmarks tagging: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def train(args: argparse.Namespace) -> None:
    """Each of `--runs`: archived from its best checkpoint (`--finalize-partial`, a run stopped
    early) or trained (unless `--skip-train`)."""
    checked(args)
    for name in args.runs:
        out = runs.RUNS / run_key(name, args.seed, args.lm_label)
        stopped = not (out / "model.tar.gz").exists() and (out / "best.th").exists()
        if args.finalize_partial and stopped:
            from allennlp.models.archival import archive_model

            print(f"[{out.name}] stopped early: archiving its best checkpoint")
            archive_model(str(out))
        elif not args.skip_train:
            runs.train(name, args)


def record(args: argparse.Namespace) -> None:
    """Each of `--runs` scored and merged into tagging.json (dev F1 only with `--dev-only`)."""
    checked(args)
    if args.lm_finetune_report:
        write_results({"lm_finetune": runs.lm_finetune_report()})
    if args.notes:
        write_results({"notes": args.notes})
    for name in args.runs:
        key = run_key(name, args.seed, args.lm_label)
        if args.dev_only or runs.RUN_SPECS[name][3] is None:
            result = runs.dev_only_record(name, args)
            print(f"[{key}] {json.dumps(result)}", flush=True)
            # runs on other LMs (--lm-label) are a study of the LMs, not a recipe choice
            section = "recipe_search" if args.lm_label is None else "lm_study"
            write_results(lambda current: {section: {**current.get(section, {}), key: result}})
        elif not (runs.RUNS / key / "model.tar.gz").exists():
            print(f"[{key}] not trained yet; skipped")
        else:
            record_test(name, key, args)


def record_test(name: str, key: str, args: argparse.Namespace) -> None:
    """A run's test F1 and its record; its results key too, unless it is a `--seed` run (which
    adds a seed to its run's mean, `final`)."""
    result = runs.evaluate(name, args)
    if args.ship:
        result.update(runs.ship(name, args))
        result["ship_command"] = command_line()
    result["command"] = runs.reproduce_command(name, args.seed, args.lm_label)
    if args.seed is not None:
        result["seed"] = args.seed
    print(f"[{key}] {json.dumps(result)}", flush=True)
    updates = {} if args.seed is not None else {runs.RUN_SPECS[name][3]: result["test_f1"]}
    write_results({**updates, key: result, "command": COMMAND})


TASKS = {"conll03": "CoNLL-03 NER", "conll00": "CoNLL-00 chunking"}
FINAL_FIGURES = {
    "conll03_test_f1_ldnet": "CoNLL-03 NER test F1, LD-Net",
    "conll03_test_f1_vanilla": "CoNLL-03 NER test F1, no LM",
    "conll00_test_f1_ldnet": "CoNLL-00 chunking test F1, LD-Net",
    "conll00_test_f1_vanilla": "CoNLL-00 chunking test F1, no LM",
}


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Issue 13's final test F1s (the mean over seeds) against their goals, and LD-Net's gain
    over the no-LM tagger, read from the `final` table's rows."""
    lines = []
    for key, figure in FINAL_FIGURES.items():
        seeds = lookup(results, f"final.{key}.seeds")
        goal = FINAL_GOALS[key]
        test = at_least(goal) if goal is not None else ()
        lines.append(headline(results, f"{figure} (mean of {seeds} seeds)", key, *test))
    index = table_index(results, "Issue 13's results")
    for row_index, row in enumerate(results["summary"][index]["rows"]):
        if row[1] == "gain of LD-Net":
            where = f"summary[{index}].rows[{row_index}]"
            task = TASKS[row[0][: len("conll03")]]
            figure = f"{task} test F1, LD-Net's gain over no LM"
            goal = None if row[4] is None else f">= +{row[4]:g}"
            met = None if row[5] is None else lookup(results, f"{where}[5]") == "met"
            lines.append(headline(results, figure, f"{where}[3]", goal, met))
    return lines


STUDY = Study(
    name="tagging",
    description="LD-Net and no-LM taggers on CoNLL-03 NER and CoNLL-00 chunking: training, "
    "test F1 (mean over seeds), FLOPs/token.",
    results_file="tagging.json",
    stages=[
        Stage("train", train, "train, resume or --extend each of --runs (not with --skip-train)"),
        Stage("record", record, "test F1 (or, --dev-only, dev F1) of each run into tagging.json"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
