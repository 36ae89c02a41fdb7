"""
pruning_budget.json as the `pruning_budget` study writes it: per task, one row per phase-2 run
(budget, tagger learning rate, epochs), the run chosen on dev and every command; calls for
either task may save side by side.
"""

from typing import Any, Dict, List, Optional

from benchmarks.harness.data import hardware
from benchmarks.harness.results import results_path, update_results_file
from benchmarks.studies.pruning_phase2 import TASKS

RESULTS = "pruning_budget"
DEFAULT_EPOCHS = 3
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

    def with_table(results: Dict[str, Any]) -> None:
        results["summary"] = table(results)

    return update_results_file(results_path(RESULTS), merged, finish=with_table)[task]


def table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The results file's `summary` table: one row per run of each task."""
    rows = []
    for task in sorted(TASKS):
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
