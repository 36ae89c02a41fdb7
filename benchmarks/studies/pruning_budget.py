"""
LD-Net pruning at several layer budgets (issue 15): what each budget of live LM layers costs in
F1 and buys in speed, for one phase-1 tagger, and the budget chosen on dev.

    python -m benchmarks pruning_budget --task ner --budgets 2 4 6 --epochs 3

1. Phase 1: `--phase1-archive` (default the shipped `pretrained/<task>_ldnet.tar.gz`) laid out as
   the serialization directory that phase 2 starts from (`pruning_phase2.phase1_from_archive`:
   `config.json`, `vocabulary/`, `best.th` with every parameter, the frozen LMs' included, and
   `model.tar.gz`, the archive itself) in `<out>/<task>_phase1`; or `--phase1-dir`.
2. Stage `train`, per budget B, phase 2: `--config` (default: the phase-2 config of
   pruning.json's headline run for the task) with the layer-selection regulariser's budget set
   to B and `--epochs` epochs (`-o` overrides), into `<out>/<task>_budget<B>` (resumed with
   `--recover` when interrupted); then `allennlp ldnet-prune`. `--tagger-lr` sets the tagger's
   (not the masks') initial learning rate, e.g. to where phase 1's schedule ended, instead of the
   config's (runs `<task>_budget<B>_lr<lr>`); `--epochs` other than 3 adds `_ep<N>`. Each run's
   invocations are kept beside it in `<run>_commands.json`, which the `pruning` study's
   `--phase2-dir` reads when it prunes, scores and times the run chosen here.
3. Stage `score`: F1 of the phase-1 and of each pruned tagger on dev (NER eng.testa; chunking the
   held-out tenth of train.txt) and on test (`allennlp evaluate`). The budget chosen on dev: the
   smallest whose pruned dev F1 is at most `--max-dev-loss` (0.3) below the phase-1 tagger's.
   Then speed, per budget (unless `--no-speed`): phase-1 against pruned tagger
   (`pruning_phase2.speed`: a warm-up round, then the median of `--repeats` interleaved rounds,
   torch threads 1 and 2).

Writes `benchmarks/results/pruning_budget.json`: per task, one row per budget, the dev choice and
every command. Each step is skipped when its output exists, so a re-run resumes.
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.allennlp import duration_seconds, run_allennlp
from benchmarks.harness.data import ROOT, read_sentences
from benchmarks.harness.results import command_line, load_results
from benchmarks.harness.runs import trained
from benchmarks.harness.study import Headline, Stage, Study, at_most, headline, lookup
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import pruning_phase2 as phase2
from benchmarks.studies.pruning_budget_results import (
    DEFAULT_EPOCHS,
    RESULTS,
    save,
    saved_rows,
)
from benchmarks.studies.pruning_phase2 import TASKS

DEV = {"ner": "CONLL03_DEV_DATA_PATH", "chunk": "CONLL00_TRAIN_DATA_PATH"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    parser.add_argument("--budgets", type=int, nargs="+", default=[2, 4, 6])
    parser.add_argument(
        "--epochs", type=int, default=DEFAULT_EPOCHS, help="phase-2 epochs per budget"
    )
    parser.add_argument("--tagger-lr", type=float, default=None, help="default: the config's")
    parser.add_argument("--phase1-archive", default=None)
    parser.add_argument("--phase1-dir", default=None)
    parser.add_argument("--config", default=None, help="phase-2 config (training_configs/...)")
    parser.add_argument("--out", default=str(ROOT / "runs" / "pruning_budget"))
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS, help="timed rounds (>= 5)")
    parser.add_argument("--batch1-sentences", type=int, default=300)
    parser.add_argument("--max-dev-loss", type=float, default=0.3)
    parser.add_argument("--no-speed", action="store_true", help="train and score only")


def budget_overrides(
    config: str, env: Dict[str, str], budget: int, epochs: int, tagger_lr: Optional[float] = None
) -> str:
    """`-o` for phase 2: the regulariser of `config` (rendered with `env`) with `budget`, and
    with `tagger_lr` the initial learning rate of the tagger's optimizer (a `multi` optimizer's
    `default`, whose masks keep theirs)."""
    rendered = phase2.rendered_config(config, env)
    regexes = rendered["model"].get("regularizer", {}).get("regexes", [])
    if not any(r.get("type") == "layer_selection" for _, r in regexes):
        raise SystemExit(f"{config}: no layer_selection regularizer to set the budget of")
    for _, regularizer in regexes:
        if regularizer.get("type") == "layer_selection":
            regularizer["budget"] = budget
    overrides = {"model.regularizer.regexes": regexes, "trainer.num_epochs": epochs}
    if tagger_lr is not None:
        optimizer = rendered["trainer"]["optimizer"]
        multi = optimizer.get("type") == "multi"
        overrides[
            "trainer.optimizer.optimizers.default.lr" if multi else "trainer.optimizer.lr"
        ] = tagger_lr
    return json.dumps(overrides)


def evaluate_f1(archive: Path, data: str, log: Path, name: str, overrides: str = "") -> float:
    """Span F1 (%) of `archive` on `data`, from `<archive>.<name>_metrics.json` if newer."""
    output = archive.with_name(archive.name.replace(".tar.gz", f".{name}_metrics.json"))
    return round(phase2.evaluated_f1(archive, data, output, log, overrides), 2)


def run_name(task: str, budget: int, tagger_lr: Optional[float], epochs: int) -> str:
    """`<task>_budget<B>`, then `_lr<lr>` with `--tagger-lr` and `_ep<N>` with `--epochs` other
    than 3, so that runs that differ in these train into their own directories."""
    name = f"{task}_budget{budget}"
    if tagger_lr is not None:
        name += f"_lr{tagger_lr:g}"
    if epochs != DEFAULT_EPOCHS:
        name += f"_ep{epochs}"
    return name


def prepared(args: argparse.Namespace) -> argparse.Namespace:
    """The task's paths, config and phase-1 directory, checked, and this invocation added to each
    budget's run commands: once per invocation, whichever stages run (kept on `args`)."""
    if getattr(args, "budget_run", None) is not None:
        return args.budget_run
    if args.repeats < MIN_ROUNDS:
        raise SystemExit(f"--repeats: at least {MIN_ROUNDS} (the median of interleaved rounds)")
    if any(b < 1 for b in args.budgets):
        raise SystemExit("--budgets: each budget is at least 1 live layer")
    task = TASKS[args.task]
    run = argparse.Namespace(task=task, out=Path(args.out), command=command_line())
    run.log = run.out / f"{args.task}.log"
    run.config = args.config or load_results("pruning").get(f"{task['prefix']}phase2_config")
    if run.config is None:
        raise SystemExit("--config: pruning.json names no phase-2 config for this task")
    if args.phase1_dir:
        run.phase1 = Path(args.phase1_dir)
    else:
        archive = Path(args.phase1_archive or ROOT / "pretrained" / f"{args.task}_ldnet.tar.gz")
        run.phase1 = phase2.phase1_from_archive(archive, run.out / f"{args.task}_phase1")
    run.env = phase2.phase2_env(args.task, run.phase1)
    run.names = {b: run_name(args.task, b, args.tagger_lr, args.epochs) for b in args.budgets}
    for name in run.names.values():
        # every invocation that worked on this run, beside it (the pruning study's --phase2-dir
        # records them with the run's headline figures)
        commands = phase2.read_commands(run.out / name)
        if run.command not in commands:
            run.out.mkdir(parents=True, exist_ok=True)
            commands_file = phase2.commands_file(run.out / name)
            commands_file.write_text(json.dumps(commands + [run.command], indent=2))
    args.budget_run = run
    return run


def train(args: argparse.Namespace) -> None:
    """Phase 2 of each budget (unless it finished), then `ldnet-prune` (unless pruned since)."""
    run = prepared(args)
    for budget, name in run.names.items():
        phase2_dir = run.out / name
        if not trained(phase2_dir):
            overrides = budget_overrides(run.config, run.env, budget, args.epochs, args.tagger_lr)
            allennlp.train(run.config, phase2_dir, run.log, overrides, run.env)
        pruned = run.out / f"{name}_pruned.tar.gz"
        model = phase2_dir / "model.tar.gz"
        if not pruned.exists() or pruned.stat().st_mtime < model.stat().st_mtime:
            prune = ["ldnet-prune", str(model), "-o", str(pruned)]
            layers = phase2.lm_layer_count(phase2_dir)
            if layers is not None and budget >= layers:
                # a control: phase 2's epochs with every layer allowed (nothing to cut; the
                # archive refers to the frozen LMs instead of copying them)
                prune += ["--keep-all-layers", "--reference-lms"]
            report = ["--report-file", str(run.out / f"{name}_report.json")]
            run_allennlp(prune + report, run.log)


def score(args: argparse.Namespace) -> None:
    """F1 on dev and test of the phase-1 tagger and of each pruned one, and (unless
    `--no-speed`) their speed; saves each budget's row as it is measured."""
    run = prepared(args)
    test_data = run.task["data"][run.task["test"]]
    dev_data = run.task["data"][DEV[args.task]]
    # chunking's dev is the held-out tenth of train.txt: the reader's holdout_path names it
    run.dev_overrides = ""
    if args.task == "chunk":
        run.dev_overrides = json.dumps({"validation_dataset_reader.holdout_path": dev_data})
    unpruned = run.phase1 / "model.tar.gz"
    phase1 = args.phase1_dir or args.phase1_archive or f"pretrained/{args.task}_ldnet.tar.gz"
    settings = dict(
        title=run.task["title"],
        phase1=str(phase1),
        phase2_config=run.config,
        dev_f1_unpruned=evaluate_f1(unpruned, dev_data, run.log, "dev", run.dev_overrides),
        test_f1_unpruned=evaluate_f1(unpruned, test_data, run.log, "test"),
        max_dev_loss=args.max_dev_loss,
    )
    rows = saved_rows(load_results(RESULTS).get(args.task, {}), args.task)
    mine: Dict[str, Dict[str, Any]] = {}  # the rows this call measured
    sentences = None if args.no_speed else read_sentences(test_data)
    for budget, name in run.names.items():
        row = budget_row(args, run, budget, name, (dev_data, test_data), settings)
        if sentences is not None:
            row.update(speed_figures(args, unpruned, run.out / f"{name}_pruned.tar.gz", sentences))
        elif name in rows:  # a --no-speed re-run keeps the timing of the same model
            row.update({k: v for k, v in rows[name].items() if k.startswith(("speedup", "words"))})
        mine[name] = row
        record = save(args.task, settings, mine, run.command)
    print(json.dumps(record, indent=2))


def budget_row(args, run, budget: int, name: str, data, settings) -> Dict[str, Any]:
    """One budget's row: layers kept, phase 2's epochs and time, FLOPs ratio, F1 and losses."""
    dev_data, test_data = data
    phase2_dir, pruned = run.out / name, run.out / f"{name}_pruned.tar.gz"
    report = json.loads((run.out / f"{name}_report.json").read_text())
    (kept,) = report["kept_layers_after"].values()  # the one LM embedder's
    metrics = json.loads((phase2_dir / "metrics.json").read_text())
    row: Dict[str, Any] = {
        "run": name,
        "budget": budget,
        "tagger_lr": args.tagger_lr,
        "epochs": args.epochs,
        "kept_layers_forward": kept["forward"],
        "kept_layers_backward": kept["backward"],
        "within_budget": metrics["best_validation_f1-measure-overall-within-budget"] >= 0,
        "live_layers_by_epoch": phase2.live_layers_by_epoch(phase2_dir),
        "phase2_best_epoch": metrics["best_epoch"],
        "phase2_seconds": round(duration_seconds(metrics["training_duration"])),
        "flops_ratio": round(report["flops_per_token_before"] / report["flops_per_token_after"], 2),
        "dev_f1_pruned": evaluate_f1(pruned, dev_data, run.log, "dev", run.dev_overrides),
        "test_f1_pruned": evaluate_f1(pruned, test_data, run.log, "test"),
    }
    row["dev_f1_loss"] = round(settings["dev_f1_unpruned"] - row["dev_f1_pruned"], 2)
    row["test_f1_loss"] = round(settings["test_f1_unpruned"] - row["test_f1_pruned"], 2)
    return row


def speed_figures(args, unpruned: Path, pruned: Path, sentences) -> Dict[str, Any]:
    """The speed-ups (threads 1 and 2) and words/s (1 thread) of a budget's row."""
    timing = phase2.speed(
        unpruned, pruned, sentences, args.repeats, args.batch1_sentences, spacy_too=False
    )
    row = {}
    for key in ("speedup_b32", "speedup_b1", "speedup_b32_threads2", "speedup_b1_threads2"):
        row[key] = round(timing[key], 2)
    for key in ("words_per_sec_pruned_b32", "words_per_sec_unpruned_b32"):
        row[key] = round(timing[key])
    return row


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: the phase-1 tagger's F1 and, for the run chosen on dev, its F1 losses and
    FLOPs ratio (the goal: a dev loss within the task's max_dev_loss)."""
    found = []
    for task in sorted(TASKS):
        if task not in results:
            continue
        record = results[task]
        found.append(
            headline(results, f"{task}: test F1, phase-1 tagger", f"{task}.test_f1_unpruned")
        )
        chosen = record.get("chosen_run_on_dev")
        index = next((i for i, r in enumerate(record["rows"]) if r["run"] == chosen), None)
        if index is None:
            continue
        at = f"{task}.rows[{index}]"
        found.append(headline(results, f"{task}: run chosen on dev", f"{task}.chosen_run_on_dev"))
        found.append(
            headline(results, f"{task}: live LM layers (budget), chosen run", f"{at}.budget")
        )
        goal = at_most(lookup(results, f"{task}.max_dev_loss"))
        found.append(
            headline(results, f"{task}: dev F1 loss, chosen run", f"{at}.dev_f1_loss", *goal)
        )
        found.append(headline(results, f"{task}: test F1 loss, chosen run", f"{at}.test_f1_loss"))
        found.append(headline(results, f"{task}: FLOPs ratio, chosen run", f"{at}.flops_ratio"))
    return found


STUDY = Study(
    name="pruning_budget",
    description="LD-Net pruning at several layer budgets: F1 lost and speed gained per budget, "
    "and the budget chosen on dev.",
    results_file="pruning_budget.json",
    stages=[
        Stage("train", train, "phase 2 of each budget, then ldnet-prune"),
        Stage("score", score, "dev and test F1, speed unless --no-speed; saves each row"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
