"""
LD-Net pruning at several layer budgets (issue 15): what each budget of live LM layers costs in
F1 and buys in speed, for one phase-1 tagger, and the budget chosen on dev.

    python benchmarks/pruning_budget_benchmark.py --task ner --budgets 2 4 6 --epochs 3

1. Phase 1: `--phase1-archive` (default the shipped `pretrained/<task>_ldnet.tar.gz`) laid out as
   the serialization directory that phase 2 starts from (`phase1_from_archive`:
   `config.json`, `vocabulary/`, `best.th` with every parameter, the frozen LMs' included, and
   `model.tar.gz`, the archive itself) in `<out>/<task>_phase1`; or `--phase1-dir`.
2. Per budget B, phase 2: `--config` (default: the phase-2 config of pruning.json's headline
   run for the task) with the layer-selection regulariser's budget set to B and `--epochs`
   epochs (`-o` overrides), into `<out>/<task>_budget<B>` (resumed with `--recover` when
   interrupted); then `allennlp ldnet-prune`. `--tagger-lr` sets the tagger's (not the masks')
   initial learning rate, e.g. to where phase 1's schedule ended, instead of the config's
   (runs `<task>_budget<B>_lr<lr>`); `--epochs` other than 3 adds `_ep<N>`. Each run's
   invocations are kept beside it in `<run>_commands.json`, which `pruning_benchmark.py
   --phase2-dir` reads when it prunes, scores and times the run chosen here.
3. F1 of the phase-1 and of each pruned tagger on dev (NER eng.testa; chunking the held-out
   tenth of train.txt) and on test (`allennlp evaluate`). The budget chosen on dev: the smallest
   whose pruned dev F1 is at most `--max-dev-loss` (0.3) below the phase-1 tagger's.
4. Speed, per budget: phase-1 against pruned tagger, interleaved (`pruning_benchmark.speed`:
   a warm-up round, then the median of `--repeats` rounds, torch threads 1 and 2).

Writes `benchmarks/results/pruning_budget.json`: per task, one row per budget, the dev choice and
every command. Each step is skipped when its output exists, so a re-run resumes.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import common, pruning_benchmark  # noqa: E402
from benchmarks.common import (  # noqa: E402
    ROOT,
    duration_seconds,
    hardware,
    load_results,
    read_sentences,
    run_allennlp,
    trained,
    update_results_file,
)

RESULTS = "pruning_budget"
DEV = {"ner": "CONLL03_DEV_DATA_PATH", "chunk": "CONLL00_TRAIN_DATA_PATH"}


def phase1_from_archive(archive: Path, out: Path) -> Path:
    """
    `archive` (a tagger with `layer_selection` LM features) as the serialization directory phase 2
    starts from: `config.json`, `vocabulary/`, `model.tar.gz` (a copy of `archive`) and
    `best.th`, every parameter and buffer of the loaded model, the frozen LMs' included (an
    archive made with `--reference-lms` leaves them out of its own weights), in float32.
    """
    if (out / "best.th").exists():
        return out
    import torch
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401  (registers the models for load_archive)

    loaded = load_archive(str(archive))
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    loaded.config.to_file(str(partial / "config.json"))
    loaded.model.vocab.save_to_files(str(partial / "vocabulary"))
    model = loaded.model
    weights = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    weights.update(model.state_dict())
    weights = {
        name: tensor.detach().float() if tensor.is_floating_point() else tensor.detach()
        for name, tensor in weights.items()
    }
    torch.save(weights, partial / "best.th")
    shutil.copyfile(archive, partial / "model.tar.gz")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return out


def budget_overrides(
    config: str, env: Dict[str, str], budget: int, epochs: int, tagger_lr: Optional[float] = None
) -> str:
    """`-o` for phase 2: the regulariser of `config` (rendered with `env`) with `budget`, and
    with `tagger_lr` the initial learning rate of the tagger's optimizer (a `multi` optimizer's
    `default`, whose masks keep theirs)."""
    rendered = pruning_benchmark.rendered_config(config, env)
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
    return round(pruning_benchmark.evaluated_f1(archive, data, output, log, overrides), 2)


DEFAULT_EPOCHS = 3


def run_name(task: str, budget: int, tagger_lr: Optional[float], epochs: int) -> str:
    """`<task>_budget<B>`, then `_lr<lr>` with `--tagger-lr` and `_ep<N>` with `--epochs` other
    than 3, so that runs that differ in these train into their own directories."""
    name = f"{task}_budget{budget}"
    if tagger_lr is not None:
        name += f"_lr{tagger_lr:g}"
    if epochs != DEFAULT_EPOCHS:
        name += f"_ep{epochs}"
    return name


def lm_layer_count(phase2: Path) -> Optional[int]:
    """The number of LM layer masks (both directions of every biLM) in a phase-2 run's
    `best.th`, or None without one."""
    weights = phase2 / "best.th"
    if not weights.exists():
        return None
    import torch

    state = torch.load(weights, map_location="cpu")
    return sum(t.numel() for name, t in state.items() if name.endswith("bilm.layer_mask"))


def chosen_run(rows: List[Dict[str, Any]], max_dev_loss: float) -> Optional[str]:
    """The run of the smallest budget that ended within budget and lost at most `max_dev_loss`
    dev F1 (of those, the one that lost least)."""
    good = [
        row
        for row in rows
        if row["within_budget"]
        and row["dev_f1_loss"] is not None
        and row["dev_f1_loss"] <= max_dev_loss
    ]
    if not good:
        return None
    return min(good, key=lambda row: (row["budget"], row["dev_f1_loss"]))["run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(pruning_benchmark.TASKS), default="ner")
    parser.add_argument("--budgets", type=int, nargs="+", default=[2, 4, 6])
    parser.add_argument(
        "--epochs", type=int, default=DEFAULT_EPOCHS, help="phase-2 epochs per budget"
    )
    parser.add_argument("--tagger-lr", type=float, default=None, help="default: the config's")
    parser.add_argument("--phase1-archive", default=None)
    parser.add_argument("--phase1-dir", default=None)
    parser.add_argument("--config", default=None, help="phase-2 config (training_configs/...)")
    parser.add_argument("--out", default=str(ROOT / "runs" / "pruning_budget"))
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (>= 5)")
    parser.add_argument("--batch1-sentences", type=int, default=300)
    parser.add_argument("--max-dev-loss", type=float, default=0.3)
    parser.add_argument("--no-speed", action="store_true", help="train and score only")
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("--repeats: at least 5 (the median of >= 5 interleaved rounds)")
    if any(b < 1 for b in args.budgets):
        parser.error("--budgets: each budget is at least 1 live layer")
    task = pruning_benchmark.TASKS[args.task]
    out = Path(args.out)
    log = out / f"{args.task}.log"
    headline = load_results("pruning").get(f"{task['prefix']}phase2_config")
    config = args.config or headline
    if config is None:
        parser.error("--config: pruning.json names no phase-2 config for this task")
    if args.phase1_dir:
        phase1 = Path(args.phase1_dir)
    else:
        archive = Path(args.phase1_archive or ROOT / "pretrained" / f"{args.task}_ldnet.tar.gz")
        phase1 = phase1_from_archive(archive, out / f"{args.task}_phase1")
    env = pruning_benchmark.phase2_env(args.task, phase1)
    command = "python benchmarks/pruning_budget_benchmark.py " + " ".join(sys.argv[1:])
    dev_data = task["data"][DEV[args.task]]
    # chunking's dev is the held-out tenth of train.txt: the reader's holdout_path names it
    dev_overrides = ""
    if args.task == "chunk":
        dev_overrides = json.dumps({"validation_dataset_reader.holdout_path": dev_data})
    test_data = task["data"][task["test"]]
    unpruned = phase1 / "model.tar.gz"
    settings = dict(
        title=task["title"],
        phase1=str(
            args.phase1_dir or args.phase1_archive or f"pretrained/{args.task}_ldnet.tar.gz"
        ),
        phase2_config=config,
        dev_f1_unpruned=evaluate_f1(unpruned, dev_data, log, "dev", dev_overrides),
        test_f1_unpruned=evaluate_f1(unpruned, test_data, log, "test"),
        max_dev_loss=args.max_dev_loss,
    )
    rows = saved_rows(load_results(RESULTS).get(args.task, {}), args.task)
    mine: Dict[str, Dict[str, Any]] = {}  # the rows this call measured
    sentences = None if args.no_speed else read_sentences(test_data)
    for budget in args.budgets:
        name = run_name(args.task, budget, args.tagger_lr, args.epochs)
        phase2 = out / name
        # every invocation that worked on this run, beside it (pruning_benchmark --phase2-dir
        # records them with the run's headline figures)
        commands_file = pruning_benchmark.commands_file(phase2)
        commands = json.loads(commands_file.read_text()) if commands_file.exists() else []
        if command not in commands:
            out.mkdir(parents=True, exist_ok=True)
            commands_file.write_text(json.dumps(commands + [command], indent=2))
        if not trained(phase2):
            train = ["train", config, "-s", str(phase2)]
            train += ["-o", budget_overrides(config, env, budget, args.epochs, args.tagger_lr)]
            run_allennlp(train + (["--recover"] if phase2.exists() else []), log, env)
        pruned = out / f"{name}_pruned.tar.gz"
        report_file = out / f"{name}_report.json"
        if (
            not pruned.exists()
            or pruned.stat().st_mtime < (phase2 / "model.tar.gz").stat().st_mtime
        ):
            prune = ["ldnet-prune", str(phase2 / "model.tar.gz"), "-o", str(pruned)]
            layers = lm_layer_count(phase2)
            if layers is not None and budget >= layers:
                # a control: phase 2's epochs with every layer allowed (nothing to cut; the
                # archive refers to the frozen LMs instead of copying them)
                prune += ["--keep-all-layers", "--reference-lms"]
            run_allennlp(prune + ["--report-file", str(report_file)], log)
        report = json.loads(report_file.read_text())
        (kept,) = report["kept_layers_after"].values()  # the one LM embedder's
        metrics = json.loads((phase2 / "metrics.json").read_text())
        row: Dict[str, Any] = {
            "run": name,
            "budget": budget,
            "tagger_lr": args.tagger_lr,
            "epochs": args.epochs,
            "kept_layers_forward": kept["forward"],
            "kept_layers_backward": kept["backward"],
            "within_budget": metrics["best_validation_f1-measure-overall-within-budget"] >= 0,
            "live_layers_by_epoch": pruning_benchmark.live_layers_by_epoch(phase2),
            "phase2_best_epoch": metrics["best_epoch"],
            "phase2_seconds": round(duration_seconds(metrics["training_duration"])),
            "flops_ratio": round(
                report["flops_per_token_before"] / report["flops_per_token_after"], 2
            ),
            "dev_f1_pruned": evaluate_f1(pruned, dev_data, log, "dev", dev_overrides),
            "test_f1_pruned": evaluate_f1(pruned, test_data, log, "test"),
        }
        row["dev_f1_loss"] = round(settings["dev_f1_unpruned"] - row["dev_f1_pruned"], 2)
        row["test_f1_loss"] = round(settings["test_f1_unpruned"] - row["test_f1_pruned"], 2)
        if sentences is not None:
            timing = pruning_benchmark.speed(
                unpruned,
                pruned,
                sentences,
                args.repeats,
                args.batch1_sentences,
                spacy_too=False,
            )
            for key in ("speedup_b32", "speedup_b1", "speedup_b32_threads2", "speedup_b1_threads2"):
                row[key] = round(timing[key], 2)
            for key in ("words_per_sec_pruned_b32", "words_per_sec_unpruned_b32"):
                row[key] = round(timing[key])
        elif name in rows:  # a --no-speed re-run keeps the timing of the same model
            row.update({k: v for k, v in rows[name].items() if k.startswith(("speedup", "words"))})
        mine[name] = row
        record = save(args.task, settings, mine, command)
    print(json.dumps(record, indent=2))


def saved_rows(record: Dict[str, Any], task: str) -> Dict[str, Dict[str, Any]]:
    """A saved task record's rows by run (rows written before `--tagger-lr` and `--epochs` get
    their names and epochs: the record's, then 3)."""
    rows = {}
    for row in record.get("rows", []):
        row.setdefault("run", f"{task}_budget{row['budget']}")
        row.setdefault("tagger_lr", None)
        row.setdefault("epochs", record.get("epochs", DEFAULT_EPOCHS))
        rows[row["run"]] = row
    return rows


def save(
    task: str, settings: Dict[str, Any], mine: Dict[str, Dict[str, Any]], command: str
) -> Dict[str, Any]:
    """Merges this call's rows into pruning_budget.json as it is now, under the file's lock:
    other calls, for either task, may run side by side and save their rows meanwhile."""

    def merged(results: Dict[str, Any]) -> Dict[str, Any]:
        record = {k: v for k, v in results.get(task, {}).items() if k != "chosen_budget_on_dev"}
        rows = saved_rows(record, task)
        record.pop("epochs", None)  # each row has its own
        rows.update(mine)
        record.update(settings)
        record["rows"] = sorted(
            rows.values(), key=lambda r: (r["budget"], r["tagger_lr"] or 0, r["epochs"])
        )
        record["chosen_run_on_dev"] = chosen_run(record["rows"], settings["max_dev_loss"])
        commands = record.get("commands", [])
        record["commands"] = commands + ([command] if command not in commands else [])
        return {
            task: record,
            "title": "LD-Net pruning: F1 and speed against the layer budget (issue 15)",
            "hardware": hardware(),
        }

    def with_summary(results: Dict[str, Any]) -> None:
        results["summary"] = summary(results)

    path = common.RESULTS_DIR / f"{RESULTS}.json"
    return update_results_file(path, merged, finish=with_summary)[task]


COLUMNS = [
    "task",
    "budget (live LM layers)",
    "tagger lr",
    "epochs",
    "kept fwd / bwd",
    "within budget",
    "dev F1 loss",
    "test F1 pruned",
    "test F1 loss",
    "FLOPs ratio",
    "speed-up b32",
    "speed-up b1",
    "chosen on dev",
]


def summary(results: Dict[str, Any]) -> Dict[str, Any]:
    rows = []
    for task in sorted(pruning_benchmark.TASKS):
        record = results.get(task, {})
        for row in saved_rows(record, task).values():
            rows.append(
                [
                    task,
                    row["budget"],
                    "config's" if row.get("tagger_lr") is None else row["tagger_lr"],
                    row["epochs"],
                    f"{row['kept_layers_forward']} / {row['kept_layers_backward']}",
                    row["within_budget"],
                    row["dev_f1_loss"],
                    row["test_f1_pruned"],
                    row["test_f1_loss"],
                    row["flops_ratio"],
                    row.get("speedup_b32"),
                    row.get("speedup_b1"),
                    row.get("run") == record.get("chosen_run_on_dev"),
                ]
            )
    return {
        "caption": "Phase 2 (LD-Net's layer selection) of one phase-1 tagger at each budget; F1 "
        "losses against that tagger (dev: NER eng.testa, chunking the held-out tenth of train; "
        "test once per pruned model); speed-ups pruned over phase-1 tagger, one thread, measured "
        "interleaved in one run per budget. Tagger lr: the tagger's initial phase-2 learning "
        "rate, when not the config's. The run chosen on dev is the smallest budget whose dev "
        "F1 loss is within max_dev_loss. Commands: <task>.commands.",
        "columns": COLUMNS,
        "rows": rows,
    }


if __name__ == "__main__":
    main()
