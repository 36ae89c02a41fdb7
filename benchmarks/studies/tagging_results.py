"""
tagging.json's derived keys, recomputed on every write (`write_results`): issue 13's headline
keys as the mean over seeds (`final`), what limits each final run (`final_limits`), and the
summary tables (the F1 table, `final`, the LM studies' sections, the recipe search). Shared by the
studies that write tagging.json: `tagging`, `lm_passes` and `lm_finetune`.
"""

import os
import platform
from typing import Any, Dict, List, Optional

from benchmarks.harness import results as results_files
from benchmarks.harness.results import Updates
from benchmarks.studies.tagging_lm_tables import (
    lm_finetune_limit,
    lm_finetune_table,
    lm_passes_limit,
    lm_passes_table,
)

RESULTS = "tagging"
TITLE = "LD-Net tagging: CoNLL-03 NER and CoNLL-00 chunking (issues 4 and 13)"

SEED_SUFFIX = "_seed"
LM_LABEL_INFIX = "_lm-"


def run_key(name: str, seed: Optional[int], lm_label: Optional[str] = None) -> str:
    """The run's folder under runs/tagging/ and its key in the results: `<run>` for AllenNLP's
    default seeds (random 13370, numpy 1337, torch 133), `<run>_seed<N>` for `--seed N`, with
    `_lm-<label>` after `<run>` for `--lm-label <label>` (a study of other LMs)."""
    key = name if lm_label is None else f"{name}{LM_LABEL_INFIX}{lm_label}"
    return key if seed is None else f"{key}{SEED_SUFFIX}{seed}"


# summary rows: (run, task, baseline run, goal on test F1)
SUMMARY_ROWS = (
    ("ner_vanilla", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet", "CoNLL-03 NER", "ner_vanilla", 90.0),
    ("ner_vanilla_lm_init", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_lm_init", "CoNLL-03 NER", "ner_vanilla_lm_init", 90.0),
    ("ner_vanilla_glove", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_glove", "CoNLL-03 NER", "ner_vanilla_glove", 91.0),
    ("ner_vanilla_glove_sgd", "CoNLL-03 NER", None, 90.0),
    ("ner_ldnet_glove_sgd", "CoNLL-03 NER", "ner_vanilla_glove_sgd", 91.0),
    ("chunk_vanilla", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet", "CoNLL-00 chunking", "chunk_vanilla", 95.0),
    ("chunk_ldnet_lm_init", "CoNLL-00 chunking", "chunk_vanilla_lm_init", 95.0),
    ("chunk_vanilla_glove", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet_glove", "CoNLL-00 chunking", "chunk_vanilla_glove", 95.0),
    ("chunk_vanilla_glove_sgd", "CoNLL-00 chunking", None, 95.0),
    ("chunk_ldnet_glove_sgd", "CoNLL-00 chunking", "chunk_vanilla_glove_sgd", 95.0),
)
TAGGERS = {
    "vanilla": "no LM (char CNN + words)",
    "ldnet": "LD-Net features",
    "ldnet_lm_init": "LD-Net features, words from the LM",
    "vanilla_lm_init": "no LM, words from the LM",
    "ldnet_glove": "LD-Net features + GloVe 50d",
    "vanilla_glove": "no LM + GloVe 50d",
    "ldnet_glove_sgd": "LD-Net features + GloVe 50d, LD-Net's SGD recipe",
    "vanilla_glove_sgd": "no LM + GloVe 50d, LD-Net's SGD recipe",
}


# Issue 13's results keys -> the run behind each (its config header says what chose it on dev).
# Each key holds the mean test F1 over the run's seeds (`<run>` with AllenNLP's default seeds and
# every `<run>_seed<N>` evaluated); `final.<key>` lists them. A key whose run has no test F1 yet
# keeps its earlier value, and `final.<key>.run` says so.
FINAL_RUNS = {
    "conll03_test_f1_ldnet": "ner_ldnet_glove_sgd",
    "conll03_test_f1_vanilla": "ner_vanilla_glove_sgd",
    "conll00_test_f1_ldnet": "chunk_ldnet_glove_sgd",
    "conll00_test_f1_vanilla": "chunk_vanilla_glove_sgd",
}


def seed_runs(results: Dict[str, Any], name: str) -> Dict[str, str]:
    """`name`'s runs among the keys of `results`, by seed: "default" -> `<run>` (AllenNLP's
    seeds), "N" -> `<run>_seed<N>`."""
    runs = {}
    for run in sorted(results):
        seed = run[len(name + SEED_SUFFIX) :]
        if run == name:
            runs["default"] = run
        elif run.startswith(name + SEED_SUFFIX) and seed.isdigit():
            runs[seed] = run
    return runs


def final_results(results: Dict[str, Any]) -> Dict[str, Any]:
    """The mean over seeds of each of FINAL_RUNS' runs that has a test F1."""
    final = {}
    for key, name in FINAL_RUNS.items():
        by_seed = {
            seed: results[run]["test_f1"]
            for seed, run in seed_runs(results, name).items()
            if isinstance(results[run], dict) and "test_f1" in results[run]
        }
        if by_seed:
            final[key] = {
                "run": name,
                "test_f1_by_seed": {seed: round(f1, 2) for seed, f1 in by_seed.items()},
                "seeds": len(by_seed),
                "mean": sum(by_seed.values()) / len(by_seed),
            }
    return final


def limits(results: Dict[str, Any]) -> List[str]:
    """What the final runs' own records say limits their F1, one line per key and seed: epochs
    (was dev F1 still rising at the last epoch?), the dev-test gap, the cost of an epoch on this
    CPU."""
    lines = []
    for key, record in results.get("final", {}).items():
        for seed in record.get("test_f1_by_seed", {"default": None}):
            name = record["run"] if seed == "default" else run_key(record["run"], int(seed))
            run = results.get(name)
            if not run:
                continue
            dev, epochs = run["dev_f1_by_epoch"], run["epochs_trained"]
            best = run["best_epoch"]
            trend = (
                "its last epoch: dev F1 still rising when it stopped"
                if best == epochs - 1
                else f"then no better for {epochs - 1 - best} more epoch(s)"
            )
            wallclock = run.get("train_wallclock_s")
            minutes = wallclock / 60 / epochs if wallclock else None
            lines.append(
                f"{key} ({name}): best dev F1 {dev[best]:.2f} at epoch {best + 1} of "
                f"{epochs}, {trend}; test {run['test_f1']:.2f}, "
                f"{run['dev_f1'] - run['test_f1']:.2f} below dev"
                + (f"; {minutes:.1f} min per epoch on one core" if minutes else "")
            )
    if results.get("lm_passes"):
        lines.append(lm_passes_limit(results["lm_passes"]))
    for task, study in sorted(results.get("lm_finetune_study", {}).items()):
        lines.append(lm_finetune_limit(task, study))
    return lines


def f1_table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The F1 table: each run's test F1 against its goal and its matched no-LM run."""
    rows = []
    for name, task, baseline, goal in SUMMARY_ROWS:
        run = results.get(name)
        if not run:
            continue
        gain = None
        if baseline and results.get(baseline):
            gain = round(run["test_f1"] - results[baseline]["test_f1"], 2)
        wallclock = run.get("train_wallclock_s")
        rows.append(
            [
                task,
                TAGGERS[name.split("_", 1)[1]],
                run["epochs_trained"],
                round(run["dev_f1"], 2),
                round(run["test_f1"], 2),
                gain,
                goal,
                run.get("flops_per_token"),
                round(wallclock / 60, 1) if wallclock else None,
            ]
        )
    return {
        "caption": "Test F1 (model picked on dev; goals from issue 13: NER >= 91 with LD-Net "
        "features and >= 90 without, chunking >= 95, LD-Net >= +1.0 over the matched no-LM "
        "tagger; the gain is over the no-LM run with the same word vectors and recipe). Each "
        "run's command is under `<run>.command`.",
        "columns": [
            "task",
            "tagger",
            "epochs",
            "dev F1",
            "test F1",
            "gain over no LM",
            "goal",
            "FLOPs/token",
            "train min",
        ],
        "rows": rows,
    }


def tables(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """tagging.json's `summary`: `final`, the F1 table, the LM studies, the recipe search."""
    found = [f1_table(results)]
    final = results.get("final")
    if final:
        found.insert(0, final_table(final))
    if results.get("lm_passes"):
        found.append(lm_passes_table(results["lm_passes"]))
    for task, study in sorted(results.get("lm_finetune_study", {}).items()):
        found.append(lm_finetune_table(task, study))
    if results.get("recipe_search"):
        found.append(recipe_table(results))
    return found


def recipe_table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The recipe search of issue 13: dev F1 only, each run against the config it changes."""
    search = results["recipe_search"]
    # the recipe search of issue 13: dev F1 only, each run against the config it changes
    search_rows = []
    for baseline in ("ner_vanilla_glove", "ner_ldnet_glove", "chunk_ldnet_glove"):
        if results.get(baseline):
            search_rows.append(
                [
                    f"{baseline} (Adam, the configs' own recipe)",
                    f"training_configs/tagging/{baseline}.jsonnet",
                    results[baseline]["dev_f1_by_epoch"],
                ]
            )
    for name, run in sorted(search.items()):
        search_rows.append([name, run["config"], run["dev_f1_by_epoch"]])
    return {
        "caption": "Recipe search (issue 13), dev F1 per epoch (NER: CoNLL-03 eng.testa; "
        "chunking: every 10th sentence of CoNLL-00 train.txt, held out from training); the test "
        "file is never read by these runs (`--dev-only`). Commands: recipe_search.<run>.command.",
        "columns": ["run", "config", "dev F1 by epoch"],
        "rows": search_rows,
    }


FINAL_GOALS = {
    "conll03_test_f1_ldnet": 91.0,
    "conll03_test_f1_vanilla": 90.0,
    "conll00_test_f1_ldnet": 95.0,
    "conll00_test_f1_vanilla": None,
}


def final_table(final: Dict[str, Any]) -> Dict[str, Any]:
    """Issue 13's headline keys: each run's test F1 per seed and the mean."""
    rows = []
    for key, record in final.items():
        goal = FINAL_GOALS.get(key)
        mean = round(record["mean"], 2)
        rows.append(
            [
                key,
                record["run"],
                record["test_f1_by_seed"],
                mean,
                goal,
                None if goal is None else ("met" if mean >= goal else "missed"),
            ]
        )
    pairs = [("conll03_test_f1_ldnet", "conll03_test_f1_vanilla", 1.0)]
    pairs.append(("conll00_test_f1_ldnet", "conll00_test_f1_vanilla", None))
    for ldnet, vanilla, goal in pairs:
        if ldnet in final and vanilla in final:
            gain = round(final[ldnet]["mean"] - final[vanilla]["mean"], 2)
            verdict = None if goal is None else ("met" if gain >= goal else "missed")
            rows.append([f"{ldnet} - {vanilla}", "gain of LD-Net", None, gain, goal, verdict])
    return {
        "caption": "Issue 13's results: the final runs (chosen on dev, test read once per "
        "model), test F1 per seed ('default' = AllenNLP's seeds, N = --seed N) and their mean, "
        "which is what the key holds.",
        "columns": ["key", "run", "test F1 by seed", "mean", "goal", ""],
        "rows": rows,
    }


def write_results(updates: Updates) -> None:
    """
    Merges `updates` (or what a callable returns for the current results) into tagging.json and
    recomputes the final keys and tables, under a lock: parallel runs lose nothing.
    """
    results_files.write_results(RESULTS, updates, finish=finish_results)


def finish_results(results: Dict[str, Any]) -> None:
    final = final_results(results)
    if final:
        results["final"] = final
        results.update({key: record["mean"] for key, record in final.items()})
        results["final_limits"] = limits(results)
    results["title"] = TITLE
    results["summary"] = tables(results)
    results["hardware"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores (shared), no GPU"
    )


def table_index(results: Dict[str, Any], caption: str) -> Optional[int]:
    """The index in `results["summary"]` of the table whose caption starts with `caption`."""
    tables = results.get("summary", [])
    return next((i for i, t in enumerate(tables) if t["caption"].startswith(caption)), None)
