"""
tagging.json's derived keys, recomputed on every write (`write_results`): the headline keys as
the mean over seeds (`final`) and the summary tables (`final`, the F1 table, and the LM studies'
sections as `lm_variants` tabulates them). Shared by the studies that write tagging.json:
`tagging`, `lm_passes` and `lm_finetune`.
"""

from typing import Any, Dict, List, Optional

from benchmarks.harness import results as results_files
from benchmarks.harness.results import Updates
from benchmarks.harness.data import LM_DIRECTIONS as DIRECTIONS

RESULTS = "tagging"
Results = Dict[str, Any]
SHIPPED_SIZE = (6, 128)  # training_configs/lm/dense_lm_*.jsonnet: num_layers, hidden_size
TITLE = "LD-Net tagging: CoNLL-03 NER and CoNLL-00 chunking"

SEED_SUFFIX = "_seed"
LM_LABEL_INFIX = "_lm-"


def run_key(name: str, seed: Optional[int], lm_label: Optional[str] = None) -> str:
    """The run's folder under runs/tagging/ and its key in the results: `<run>` for AllenNLP's
    default seeds (random 13370, numpy 1337, torch 133), `<run>_seed<N>` for `--seed N`, with
    `_lm-<label>` after `<run>` for `--lm-label <label>` (a study of other LMs)."""
    key = name if lm_label is None else f"{name}{LM_LABEL_INFIX}{lm_label}"
    return key if seed is None else f"{key}{SEED_SUFFIX}{seed}"


TASK_NAMES = {"ner": "CoNLL-03 NER", "chunk": "CoNLL-00 chunking"}
# goal on test F1: by task, and 91 for the LD-Net taggers with GloVe on NER
F1_GOALS = {"ner": 90.0, "chunk": 95.0, "ner_ldnet_glove": 91.0, "ner_ldnet_glove_sgd": 91.0}
# the F1 table's taggers, in its order (per task); each LD-Net run beside its no-LM run
TAGGERS = {
    "vanilla": "no LM (char CNN + words)",
    "ldnet": "LD-Net features",
    "vanilla_lm_init": "no LM, words from the LM",
    "ldnet_lm_init": "LD-Net features, words from the LM",
    "vanilla_glove": "no LM + GloVe 50d",
    "ldnet_glove": "LD-Net features + GloVe 50d",
    "vanilla_glove_sgd": "no LM + GloVe 50d, LD-Net's SGD recipe",
    "ldnet_glove_sgd": "LD-Net features + GloVe 50d, LD-Net's SGD recipe",
}


# The headline results keys -> the run behind each (its config header says what chose it on dev)
# and the goal on its test F1. Each key holds the mean test F1 over the run's seeds (`<run>` with
# AllenNLP's default seeds and every `<run>_seed<N>` evaluated); `final.<key>` lists them. A key
# whose run has no test F1 yet keeps its earlier value, and `final.<key>.run` says so.
FINAL = {
    "conll03_test_f1_ldnet": ("ner_ldnet_glove_sgd", 91.0),
    "conll03_test_f1_vanilla": ("ner_vanilla_glove_sgd", 90.0),
    "conll00_test_f1_ldnet": ("chunk_ldnet_glove_sgd", 95.0),
    "conll00_test_f1_vanilla": ("chunk_vanilla_glove_sgd", None),
}
GAIN_GOALS = {"conll03": 1.0, "conll00": None}  # on LD-Net's mean gain over the no-LM tagger
# each task's final LD-Net recipe (FINAL's LD-Net runs)
FINAL_RECIPES = {
    "ner": FINAL["conll03_test_f1_ldnet"][0],
    "chunk": FINAL["conll00_test_f1_ldnet"][0],
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
    """The mean over seeds of each of FINAL's runs that has a test F1."""
    final = {}
    for key, (name, _) in FINAL.items():
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


def table(caption: str, columns: str, rows: List[List[Any]]) -> Dict[str, Any]:
    """A summary table; `columns` separated by "|"."""
    return {"caption": caption, "columns": columns.split("|"), "rows": rows}


def f1_table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The F1 table: each run's test F1 against its goal and its matched no-LM run."""
    rows = []
    for task, tagger in ((task, tagger) for task in TASK_NAMES for tagger in TAGGERS):
        name, run = f"{task}_{tagger}", results.get(f"{task}_{tagger}")
        if not run:
            continue
        baseline = results.get(name.replace("_ldnet", "_vanilla")) if "_ldnet" in name else None
        gain = round(run["test_f1"] - baseline["test_f1"], 2) if baseline else None
        wallclock = run.get("train_wallclock_s")
        rows.append(
            [TASK_NAMES[task], TAGGERS[tagger], run["epochs_trained"]]
            + [round(run["dev_f1"], 2), round(run["test_f1"], 2), gain]
            + [F1_GOALS.get(name, F1_GOALS[task]), run.get("flops_per_token")]
            + [round(wallclock / 60, 1) if wallclock else None]
        )
    caption = (
        "Test F1 (model picked on dev; goals: NER >= 91 with LD-Net features and >= 90 without, "
        "chunking >= 95, LD-Net >= +1.0 over the matched no-LM tagger; the gain is over the "
        "no-LM run with the same word vectors and recipe). Each run's command is under "
        "`<run>.command`."
    )
    columns = "task|tagger|epochs|dev F1|test F1|gain over no LM|goal|FLOPs/token|train min"
    return table(caption, columns, rows)


def late_mean(dev: List[float], epochs: int) -> Optional[float]:
    """Mean dev F1 over the second half of the first `epochs` epochs (less noisy than one)."""
    late = dev[epochs // 2 : epochs]
    return round(sum(late) / len(late), 2) if len(dev) >= epochs else None


def late_epochs(epochs: int) -> str:
    return f"{epochs // 2 + 1}-{epochs}"


def perplexities(lms: Results, key: str) -> List[float]:
    return [lms[direction][key] for direction in DIRECTIONS]


def lm_passes_table(study: Results) -> Results:
    """`lm_passes`: dev F1 against LM size, passes and epochs, with the LMs' training cost."""
    epochs, rows = study["epochs"], []
    for row in study["rows"]:
        lms, dev, seconds = row["lms"], row["dev_f1_by_epoch"], row.get("train_wallclock_s")
        if lms is None:
            rows.append([row["run"], "none", "none", None, None])
        else:  # the shipped size when not recorded
            size = (lms.get("num_layers", SHIPPED_SIZE[0]), lms.get("hidden_size", SHIPPED_SIZE[1]))
            rows.append([row["run"], "{}x{}".format(*size), lms["passes"], lms.get("cpu_hours")])
            rows[-1].append(perplexities(lms, "dev_perplexity"))
        rows[-1] += [dev, dev[epochs - 1] if len(dev) >= epochs else None, late_mean(dev, epochs)]
        rows[-1].append(seconds and round(seconds / row["epochs_trained"]))
    caption = (
        "Dev F1 (CoNLL-03 eng.testa) against LM size and passes: the final NER recipe on LMs of "
        "the shipped vocabulary and of the shipped size (6 dense layers x 128) or another, that "
        "saw 0 (initialised only) or more passes over the LM corpus, beside the shipped LMs' "
        f"taggers and the no-LM taggers over the same first {epochs} epochs. LM CPU-hours: both "
        "directions' training seconds on CPU, one thread each (the shipped LMs trained on a "
        "GPU). LM dev perplexity on the LM corpus' held-out sentences. Tagger s/epoch: its "
        "training wall-clock over its epochs (one thread; rows may come from different "
        "machines). Commands: lm_passes.commands and each row's command."
    )
    columns = "run|LM size|LM passes|LM CPU-hours|LM dev perplexity (fwd, bwd)|dev F1 by epoch|"
    columns += f"dev F1 at epoch {epochs}|mean dev F1, epochs {late_epochs(epochs)}|tagger s/epoch"
    return table(caption, columns, rows)


def lm_finetune_table(task: str, study: Results) -> Results:
    """`lm_finetune_study.<task>`: the final recipe's dev F1 on LMs fine-tuned on the task's
    training text against the shipped LMs, at equal epochs."""
    epochs, lms = study["epochs"], study["lms"]
    perplexity = {
        "fine-tuned": perplexities(lms, "dev_perplexity_after"),
        "shipped": perplexities(lms, "dev_perplexity_before"),
    }
    rows = [
        [row["lms"], row["seed"], perplexity[row["lms"]], row["dev_f1_by_epoch"]]
        + [row["best_dev_f1"], late_mean(row["dev_f1_by_epoch"], epochs)]
        for row in study["rows"]
    ]
    data = "CoNLL-03 eng.testa" if task == "ner" else "the held-out tenth of CoNLL-00 train.txt"
    fine_tuning = ", ".join(
        f"{d}: epoch {lms[d]['best_epoch']} of {lms[d]['epochs']} kept, {lms[d]['seconds']} s"
        for d in DIRECTIONS
    )
    caption = (
        f"{task}: {study['tagger']} on the shipped LMs and on the same LMs fine-tuned on the "
        f"task's training text (ELMo's domain transfer; {fine_tuning}), dev F1 ({data}) over the "
        f"same first {epochs} epochs, by seed. LM dev perplexity (fwd, bwd): on the task's dev "
        f"text ({lms['dev_text']}). Commands: lm_finetune_study.{task}.commands and each row's "
        "command."
    )
    columns = "LMs|seed|LM dev perplexity (fwd, bwd)|dev F1 by epoch|best dev F1|"
    return table(caption, columns + f"mean dev F1, epochs {late_epochs(epochs)}", rows)


def tables(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """tagging.json's `summary`: `final`, the F1 table, the LM studies' tables."""
    final, studies = results.get("final"), sorted(results.get("lm_finetune_study", {}).items())
    found = ([final_table(final)] if final else []) + [f1_table(results)]
    found += [lm_passes_table(results["lm_passes"])] if results.get("lm_passes") else []
    return found + [lm_finetune_table(task, study) for task, study in studies]


def verdict(value: float, goal: Optional[float]) -> Optional[str]:
    return None if goal is None else ("met" if value >= goal else "missed")


def final_table(final: Dict[str, Any]) -> Dict[str, Any]:
    """The headline keys: each final run's test F1 per seed and the mean; LD-Net's gain."""
    rows = []
    for key, record in final.items():
        goal, mean = FINAL[key][1], round(record["mean"], 2)
        rows.append(
            [key, record["run"], record["test_f1_by_seed"], mean, goal, verdict(mean, goal)]
        )
    for corpus, goal in GAIN_GOALS.items():
        ldnet, vanilla = f"{corpus}_test_f1_ldnet", f"{corpus}_test_f1_vanilla"
        if ldnet in final and vanilla in final:
            gain = round(final[ldnet]["mean"] - final[vanilla]["mean"], 2)
            rows.append([f"{ldnet} - {vanilla}", "gain of LD-Net", None, gain, goal])
            rows[-1].append(verdict(gain, goal))
    caption = (
        "The final runs (chosen on dev, test read once per model), test F1 per seed ('default' "
        "= AllenNLP's seeds, N = --seed N) and their mean, which is what the key holds."
    )
    return table(caption, "key|run|test F1 by seed|mean|goal|", rows)


def write_results(updates: Updates) -> None:
    """Merges `updates` (or what a callable returns for the current results) into tagging.json
    and recomputes the derived keys (`harness.results.write_results`)."""
    results_files.write_results(RESULTS, updates, finish=finish_results)


def finish_results(results: Dict[str, Any]) -> None:
    final = final_results(results)
    if final:
        results["final"] = final
        results.update({key: record["mean"] for key, record in final.items()})
    results["title"] = TITLE
    results["summary"] = tables(results)


def table_index(results: Dict[str, Any], caption: str) -> Optional[int]:
    """The index in `results["summary"]` of the table whose caption starts with `caption`."""
    tables = results.get("summary", [])
    return next((i for i, t in enumerate(tables) if t["caption"].startswith(caption)), None)
