"""
LD-Net pruning on real data, two studies over the phase-2 runs of `pruning_phase2`:

- `pruning` (pruning.json): stage `phase2` trains `training_configs/tagging/<--config>.jsonnet`
  (default `<task>_ldnet_glove_prune`) from `--phase1-dir` (default the tagging study's
  `runs/tagging/<task>_ldnet_glove`), or takes the finished `--phase2-dir` run, checked to be
  that config, then prunes it (and again in fp16, the LMs referred to). Stage `measure`: test F1
  of the phase-1 and both pruned taggers, words/s (`pruning_phase2.speed`, spaCy sm beside NER);
  the task's keys replaced (NER unprefixed, chunking `conll00_`).
- `pruning_budget` (pruning_budget.json): stage `train`, per `--budgets` B, phase 2 of
  `--config` (default pruning.json's) with the regulariser's budget B, `--epochs` and
  `--tagger-lr` into `<out>/<task>_budget<B>[_lr<lr>][_ep<N>]`, from `--phase1-dir` or
  `pretrained/<task>_ldnet.tar.gz` laid out as one, then prunes it. Stage `score`: dev and test
  F1 and speed of each; the run chosen on dev is the smallest budget that loses at most
  `--max-dev-loss` dev F1 against the phase-1 tagger. With `--lm-label` (a phase 1 on other
  LMs), dev F1 only, kept apart under `lm_study`.

    python -m benchmarks pruning --task ner --config <config> --phase2-dir runs/pruning_budget/<run>
    python -m benchmarks pruning_budget --task ner --budgets 2 4 6 --epochs 3

A step whose output exists is skipped. Every invocation that works on a phase-2 run is kept
beside it (`<run>_commands.json`) and recorded with its figures.
"""

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.harness import allennlp
from benchmarks.harness.data import ROOT, hardware, read_sentences
from benchmarks.harness.results import command_line, load_results, results_path
from benchmarks.harness.results import write_results
from benchmarks.harness.study import Headline, Stage, Study, at_most, headline, lookup
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import pruning_phase2 as phase2
from benchmarks.studies.pruning_phase2 import TASKS

DEFAULT_EPOCHS = 3  # of a budget's phase 2


def add_arguments(parser: argparse.ArgumentParser, budget: bool = False) -> None:
    """The options of `pruning`, or with `budget` those of `pruning_budget`."""
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    phase1 = "pretrained/<task>_ldnet.tar.gz" if budget else "runs/tagging/<task>_ldnet_glove"
    parser.add_argument("--phase1-dir", default=None, help=f"phase 1 (default: {phase1})")
    config = "its path (default: pruning.json's for the task)"
    if not budget:
        config = "a name under training_configs/tagging (default: <task>_ldnet_glove_prune)"
    parser.add_argument("--config", default=None, help=f"the phase-2 config: {config}")
    parser.add_argument("--out", default=str(ROOT / "runs" / f"pruning{'_budget' * budget}"))
    epochs = DEFAULT_EPOCHS if budget else None
    parser.add_argument("--epochs", type=int, default=epochs, help="phase-2 epochs")
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS, help="timed rounds (>= 5)")
    parser.add_argument("--batch1-sentences", type=int, default=300)
    parser.add_argument("--no-speed", action="store_true", help="no timing")
    if budget:
        parser.add_argument("--budgets", type=int, nargs="+", default=[2, 4, 6])
        parser.add_argument("--tagger-lr", type=float, default=None, help="default: the config's")
        parser.add_argument("--max-dev-loss", type=float, default=0.3)
        parser.add_argument(
            "--lm-label",
            default=None,
            help="the phase-1 tagger's LMs, in a study of other LMs: dev F1 only (test is never "
            "read), no timing; the rows go under lm_study.<task>_lm-<label>",
        )
    else:
        parser.add_argument("--speed-only", action="store_true", help="train no phase 2")
        parser.add_argument("--phase2-dir", default=None, help="a finished phase-2 run to score")


def prepared(args: argparse.Namespace) -> argparse.Namespace:
    """This invocation's phase 1, phase-2 config and runs, checked, with the invocation kept
    beside each run: once per invocation, whichever stages run (kept on `args`)."""
    if getattr(args, "pruning_run", None) is not None:
        return args.pruning_run
    budget = hasattr(args, "budgets")  # pruning_budget's
    run = argparse.Namespace(task=TASKS[args.task], out=Path(args.out), command=command_line())
    run.log = run.out / f"{args.task}.log"
    if args.phase1_dir or not budget:
        run.phase1 = Path(args.phase1_dir or ROOT / "runs" / "tagging" / f"{args.task}_ldnet_glove")
    else:
        archive = ROOT / "pretrained" / f"{args.task}_ldnet.tar.gz"
        run.phase1 = phase2.phase1_from_archive(archive, run.out / f"{args.task}_phase1")
    if not (run.phase1 / "model.tar.gz").exists():
        raise SystemExit(f"{run.phase1}/model.tar.gz is missing: train phase 1 first")
    run.env = phase2.phase2_env(args.task, run.phase1)
    args.pruning_run = run
    return budget_runs(args, run) if budget else pruning_run(args, run)


def pruning_run(args: argparse.Namespace, run: argparse.Namespace) -> argparse.Namespace:
    """The `pruning` study's phase-2 run, its archives and the invocations kept beside it."""
    if args.phase2_dir and args.epochs is not None:
        raise SystemExit("--epochs: the --phase2-dir run is trained already")
    config = args.config or f"{args.task}_ldnet_glove_prune"
    run.config = f"training_configs/tagging/{config}.jsonnet"
    run.stem = Path(config).name  # recipe/<config> -> <config>
    run.phase2 = Path(args.phase2_dir) if args.phase2_dir else run.out / run.stem
    run.pruned = run.out / f"{run.stem.replace('_prune', '_pruned')}.tar.gz"
    run.pruned_fp16 = run.pruned.with_name(run.pruned.name.replace(".tar.gz", "_fp16.tar.gz"))
    run.report = run.out / f"{run.stem}_report.json"
    if args.phase2_dir:
        phase2.trained_phase2(run.phase2, run.config, run.env)
    trained_by = run.phase2 if args.phase2_dir else None
    run.commands = phase2.add_command(run.out / run.stem, run.command, trained_by)
    run.retrained = False
    return run


def train_and_prune(args: argparse.Namespace) -> None:
    """Phase 2 (unless `--speed-only` or `--phase2-dir`), then both pruned archives."""
    run = prepared(args)
    if not args.speed_only and not args.phase2_dir:
        overrides = {"trainer.num_epochs": args.epochs} if args.epochs is not None else None
        run.retrained = allennlp.train(run.config, run.phase2, run.log, overrides, run.env)
    phase2.prune(run.phase2, run.pruned, run.log, run.report)
    # weights in fp16, the frozen LMs referred to, not copied: what pretrained/ ships
    phase2.prune(run.phase2, run.pruned_fp16, run.log, options=["--fp16", "--reference-lms"])


def measure(args: argparse.Namespace) -> None:
    """Test F1 and, unless `--no-speed`, words/s; this task's keys of pruning.json replaced."""
    run = prepared(args)
    result = phase2.run_figures(run.phase2, run.report)
    result.update(
        title=f"LD-Net pruning: {run.task['title']}",
        command=run.command,
        commands=run.commands,
        phase2_config=run.config,
        phase2_dir=str(run.phase2),
        phase1_dir=str(run.phase1),
        hardware=hardware(),
    )
    f1, unpruned = run.task["f1_key"], run.phase1 / "model.tar.gz"
    archives = dict(unpruned=unpruned, pruned=run.pruned, pruned_fp16=run.pruned_fp16)
    for name, archive in archives.items():
        result[f"{f1}_{name}"] = phase2.evaluated_f1(archive, args.task, "test", run.log)
    result["f1_loss"] = result[f"{f1}_unpruned"] - result[f"{f1}_pruned"]
    if not args.no_speed:  # how it is timed: `pruning_phase2.speed`
        sentences = read_sentences(run.task["data"][run.task["test"]])
        timed = (unpruned, run.pruned, sentences, args.repeats, args.batch1_sentences)
        result.update(phase2.speed(*timed, args.task == "ner"), rounds=args.repeats)
        result["batch1_sentences"] = args.batch1_sentences
    write_results(  # under the file's lock: the other task's run may save meanwhile
        results_path("pruning"),
        lambda current: merged_results(current, result, run.task, run.retrained),
        replace=True,
    )
    print(json.dumps(result, indent=2))


def merged_results(
    results: Dict[str, Any], result: Dict[str, Any], task: Dict[str, Any], retrained: bool
) -> Dict[str, Any]:
    """
    pruning.json with this run's `result` in place of the keys of `task` (an entry of `TASKS`:
    its keys carry its prefix, its F1 keys as they are). The task's figures that this run did
    not measure (e.g. the timings of a `--no-speed` run) stay when phase 2 was not retrained and
    they are of the same phase-1 tagger and phase-2 run (config and directory).
    """
    prefix, results = task["prefix"], {k: v for k, v in results.items() if k != "summary"}
    chunk = TASKS["chunk"]["prefix"]
    owned = {k: v for k, v in results.items() if k.startswith(chunk) == bool(prefix)}
    merged = {k: v for k, v in results.items() if k not in owned}
    for key, value in result.items():
        merged[key if key.startswith(task["f1_key"]) or not prefix else prefix + key] = value
    same = ("phase1_dir", "phase2_config", "phase2_dir")
    if not retrained and all(owned.get(prefix + k) == result.get(k) for k in same):
        for key, value in owned.items():
            merged.setdefault(key, value)
    return merged


HEADLINES = [  # (figure, key without the task's prefix)
    ("test F1, un-pruned", "{f1}_unpruned"),
    ("test F1, pruned", "{f1}_pruned"),
    ("test F1, pruned, fp16 weights", "{f1}_pruned_fp16"),
    ("test F1 loss", "{prefix}f1_loss"),
    ("FLOPs/token, un-pruned / pruned", "{prefix}flops_ratio"),
    ("words/s, pruned / un-pruned, batch 32", "{prefix}speedup_b32"),
    ("words/s, pruned / un-pruned, batch 1", "{prefix}speedup_b1"),
]


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: test F1 un-pruned and pruned, the F1 loss, the FLOPs and words/s ratios, and
    whether phase 2 ended within its layer budget; spaCy sm's words/s beside the pruned NER."""
    found = []
    for name, task in TASKS.items():
        keys = {"f1": task["f1_key"], "prefix": task["prefix"]}
        if f"{task['f1_key']}_pruned" not in results:
            continue
        found += [
            headline(results, f"{name}: {figure}", key.format(**keys)) for figure, key in HEADLINES
        ]
        within = f"{task['prefix']}phase2_within_budget"
        figure = f"{name}: phase 2 ended within its layer budget"
        found.append(headline(results, figure, within, "yes", lookup(results, within)))
    if "words_per_sec_spacy_sm" in results:
        found.append(headline(results, "ner: words/s, spaCy sm, b32", "words_per_sec_spacy_sm"))
        ratio = "pruned_vs_spacy_b32"
        found.append(headline(results, "ner: words/s, pruned / spaCy sm, b32", ratio))
    return found


def budget_overrides(
    config: str, env: Dict[str, str], budget: int, epochs: int, tagger_lr: Optional[float] = None
) -> str:
    """`-o` for phase 2: the regulariser of `config` (rendered with `env`) with `budget`, and
    with `tagger_lr` the initial learning rate of the tagger's optimizer (a `multi` optimizer's
    `default`, whose masks keep theirs)."""
    rendered = phase2.rendered_config(config, env)
    regexes = rendered["model"].get("regularizer", {}).get("regexes", [])
    selections = [r for _, r in regexes if r.get("type") == "layer_selection"]
    if not selections:
        raise SystemExit(f"{config}: no layer_selection regularizer to set the budget of")
    for regularizer in selections:
        regularizer["budget"] = budget
    overrides = {"model.regularizer.regexes": regexes, "trainer.num_epochs": epochs}
    if tagger_lr is not None:
        multi = rendered["trainer"]["optimizer"].get("type") == "multi"
        key = "trainer.optimizer.optimizers.default.lr" if multi else "trainer.optimizer.lr"
        overrides[key] = tagger_lr
    return json.dumps(overrides)


def run_name(task: str, budget: int, tagger_lr: Optional[float], epochs: int) -> str:
    """`<task>_budget<B>`, then `_lr<lr>` with `--tagger-lr` and `_ep<N>` with `--epochs` other
    than 3: runs that differ in these train into their own directories."""
    name = f"{task}_budget{budget}"
    name += "" if tagger_lr is None else f"_lr{tagger_lr:g}"
    return name + ("" if epochs == DEFAULT_EPOCHS else f"_ep{epochs}")


def budget_runs(args: argparse.Namespace, run: argparse.Namespace) -> argparse.Namespace:
    """The budget sweep's phase-2 config and runs by budget, each with the invocation kept."""
    if any(b < 1 for b in args.budgets):
        raise SystemExit("--budgets: each budget is at least 1 live layer")
    run.config = args.config or load_results("pruning").get(f"{run.task['prefix']}phase2_config")
    if run.config is None:
        raise SystemExit("--config: pruning.json names no phase-2 config for this task")
    run.names = {b: run_name(args.task, b, args.tagger_lr, args.epochs) for b in args.budgets}
    for name in run.names.values():
        phase2.add_command(run.out / name, run.command)
    return run


def train_budgets(args: argparse.Namespace) -> None:
    """Phase 2 of each budget (unless it finished), then `ldnet-prune` (unless pruned since)."""
    run = prepared(args)
    for budget, name in run.names.items():
        overrides = budget_overrides(run.config, run.env, budget, args.epochs, args.tagger_lr)
        allennlp.train(run.config, run.out / name, run.log, overrides, run.env)
        report = run.out / f"{name}_report.json"
        phase2.prune(run.out / name, run.out / f"{name}_pruned.tar.gz", run.log, report)


SPLITS = ("dev", "test")
SPEEDS = ("words_per_sec_pruned_b32", "words_per_sec_unpruned_b32")  # of a budget's row


def score_budgets(args: argparse.Namespace) -> None:
    """F1 on dev and test of the phase-1 tagger and of each pruned one, and (unless
    `--no-speed`) their speed; saves each budget's row as it is measured: layers kept, phase 2's
    epochs and time, FLOPs ratio, F1 by split and the losses against the phase-1 tagger's. With
    `--lm-label`, dev F1 only and no timing, saved under `lm_study.<task>_lm-<label>`."""
    run = prepared(args)
    label = getattr(args, "lm_label", None)
    splits = ("dev",) if label else SPLITS

    def f1(archive: Path) -> Dict[str, float]:
        return {s: round(phase2.evaluated_f1(archive, args.task, s, run.log), 2) for s in splits}

    unpruned = f1(run.phase1 / "model.tar.gz")
    phase1 = args.phase1_dir or f"pretrained/{args.task}_ldnet.tar.gz"
    settings = dict(title=run.task["title"], phase1=str(phase1), phase2_config=run.config)
    settings.update({f"{split}_f1_unpruned": unpruned[split] for split in splits})
    settings["max_dev_loss"] = args.max_dev_loss
    saved = budget_record(load_results("pruning_budget"), args.task, label).get("rows", [])
    saved = {row["run"]: row for row in saved}
    no_speed = args.no_speed or label
    sentences = None if no_speed else read_sentences(run.task["data"][run.task["test"]])
    mine: Dict[str, Dict[str, Any]] = {}  # the rows this call measured
    for budget, name in run.names.items():
        found = phase2.run_figures(run.out / name, run.out / f"{name}_report.json")
        row = {k: found[k] for k in ("kept_layers_forward", "kept_layers_backward")}
        row.update(within_budget=found["phase2_within_budget"])
        row.update({k: found[k] for k in ("live_layers_by_epoch", "phase2_best_epoch")})
        row.update(run=name, budget=budget, tagger_lr=args.tagger_lr, epochs=args.epochs)
        row["phase2_seconds"] = round(allennlp.duration_seconds(found["phase2_training_duration"]))
        row["flops_ratio"] = round(found["flops_ratio"], 2)
        pruned = run.out / f"{name}_pruned.tar.gz"
        for split, f1_pruned in f1(pruned).items():  # and the losses against the phase-1 tagger
            row[f"{split}_f1_pruned"] = f1_pruned
            row[f"{split}_f1_loss"] = round(unpruned[split] - f1_pruned, 2)
        if sentences is not None:
            timed = (run.phase1 / "model.tar.gz", pruned, sentences, args.repeats)
            timing = phase2.speed(*timed, args.batch1_sentences, False)
            row.update({k: round(v, 2) for k, v in timing.items() if k.startswith("speedup")})
            row.update({k: round(timing[k]) for k in SPEEDS})
        elif name in saved:  # a --no-speed re-run keeps the timing of the same model
            row.update({k: v for k, v in saved[name].items() if k.startswith(("speed", "words"))})
        mine[name] = row
        record = save_budgets(args.task, settings, mine, run.command, label)
    print(json.dumps(record, indent=2))


def budget_record(results: Dict[str, Any], task: str, label: Optional[str]) -> Dict[str, Any]:
    """The record of `task`'s rows in pruning_budget.json: `results[task]`, or with an LM
    `label` `results["lm_study"]["<task>_lm-<label>"]` (empty where there is none yet)."""
    if label is None:
        return results.get(task, {})
    return results.get("lm_study", {}).get(f"{task}_lm-{label}", {})


def chosen_run(rows: List[Dict[str, Any]], max_dev_loss: float) -> Optional[str]:
    """The run of the smallest budget that ended within budget and lost at most `max_dev_loss`
    dev F1 (of those, the one that lost least)."""
    good = [r for r in rows if r["within_budget"] and r["dev_f1_loss"] <= max_dev_loss]
    return min(good, key=lambda r: (r["budget"], r["dev_f1_loss"]))["run"] if good else None


def save_budgets(
    task: str,
    settings: Dict[str, Any],
    mine: Dict[str, Dict[str, Any]],
    command: str,
    label: Optional[str] = None,
) -> Dict[str, Any]:
    """This call's rows merged into pruning_budget.json as it is now (`budget_record`'s
    place), under the file's lock: other calls, for either task, may save their rows
    meanwhile."""

    def merged(results: Dict[str, Any]) -> Dict[str, Any]:
        record = {**budget_record(results, task, label), **settings}
        rows = {**{row["run"]: row for row in record.get("rows", [])}, **mine}
        record["rows"] = sorted(
            rows.values(), key=lambda r: (r["budget"], r["tagger_lr"] or 0, r["epochs"])
        )
        record["chosen_run_on_dev"] = chosen_run(record["rows"], settings["max_dev_loss"])
        record["commands"] = list(dict.fromkeys(record.get("commands", []) + [command]))
        title = "LD-Net pruning: F1 and speed against the layer budget"
        if label is not None:
            study = {**results.get("lm_study", {}), f"{task}_lm-{label}": record}
            return {"lm_study": study, "title": title}
        return {task: record, "title": title, "hardware": hardware()}

    # no summary table: the rows are the record, the headlines what BENCHMARKS.md shows
    finish = lambda results: results.pop("summary", None)  # noqa: E731
    written = write_results(results_path("pruning_budget"), merged, finish=finish)
    return budget_record(written, task, label)


def budget_summary(results: Dict[str, Any]) -> List[Headline]:
    """Per task: the phase-1 tagger's F1 and, for the run chosen on dev, its F1 losses and
    FLOPs ratio (the goal: a dev loss within the task's max_dev_loss)."""
    found = []
    for task in sorted(set(TASKS) & set(results)):
        record = results[task]
        found.append(
            headline(results, f"{task}: test F1, phase-1 tagger", f"{task}.test_f1_unpruned")
        )
        runs = [row["run"] for row in record["rows"]]
        if record.get("chosen_run_on_dev") not in runs:
            continue
        at = f"{task}.rows[{runs.index(record['chosen_run_on_dev'])}]"
        goal = at_most(lookup(results, f"{task}.max_dev_loss"))
        for figure, key, *met in [
            ("run chosen on dev", f"{task}.chosen_run_on_dev"),
            ("live LM layers (budget), chosen run", f"{at}.budget"),
            ("dev F1 loss, chosen run", f"{at}.dev_f1_loss", *goal),
            ("test F1 loss, chosen run", f"{at}.test_f1_loss"),
            ("FLOPs ratio, chosen run", f"{at}.flops_ratio"),
        ]:
            found.append(headline(results, f"{task}: {figure}", key, *met))
    return found


STUDY = Study(
    name="pruning",
    description="LD-Net pruning: phase 2, ldnet-prune, test F1 and words/s of the pruned "
    "tagger against the phase-1 tagger and spaCy sm.",
    results_file="pruning.json",
    stages=[
        Stage("phase2", train_and_prune, "phase 2 (unless --speed-only/--phase2-dir), prune"),
        Stage("measure", measure, "test F1 and, unless --no-speed, words/s; merges the results"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)

BUDGET_STUDY = Study(
    name="pruning_budget",
    description="LD-Net pruning at several layer budgets: F1 lost and speed gained per budget, "
    "and the budget chosen on dev.",
    results_file="pruning_budget.json",
    stages=[
        Stage("train", train_budgets, "phase 2 of each budget, then ldnet-prune"),
        Stage("score", score_budgets, "dev and test F1, speed unless --no-speed; saves each row"),
    ],
    add_arguments=lambda parser: add_arguments(parser, budget=True),
    summary=budget_summary,
)
