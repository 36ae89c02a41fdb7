"""
The distillation study's derived keys (gains, `title`, `command`, the `summary` tables),
recomputed from all tasks' figures on every save, and the commands that wrote figures.
"""

from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.results import command_line
from benchmarks.studies.distillation_data import VARIANTS


def record_command(results: Dict[str, Any], part: str, run_dir: Path) -> None:
    """The running command in `commands`, the part's own entries from other run dirs replaced
    (the figures they wrote are replaced too)."""
    entry = {"part": part, "command": command_line(), "run_dir": str(run_dir)}
    kept = [
        c for c in results.get("commands", []) if c["part"] != part or c["run_dir"] == str(run_dir)
    ]
    results["commands"] = kept + ([] if entry in kept else [entry])


def gains(results: Dict[str, Any]) -> None:
    """`<p>_<split>_gain_distilled_aug_over_bilstm` and `..._gap_teacher_minus_distilled_aug`."""
    for prefix in ("sst2", "pair"):
        for split in ("dev", "test"):
            teacher, bilstm, student = (
                results.get(f"{prefix}_{split}_acc_{v}")
                for v in ("teacher", "bilstm", "distilled_aug")
            )
            if bilstm is not None and student is not None:
                key = f"{prefix}_{split}_gain_distilled_aug_over_bilstm"
                results[key] = round(student - bilstm, 2)
            if teacher is not None and student is not None:
                key = f"{prefix}_{split}_gap_teacher_minus_distilled_aug"
                results[key] = round(teacher - student, 2)


def finish_results(results: Dict[str, Any], name: str = "distillation") -> None:
    """The keys derived from all tasks' figures, recomputed on the file as saved (`name`: the
    results file's, for the title)."""
    gains(results)
    suffix = "" if name == "distillation" else f" ({name})"
    results["title"] = f"Tang et al. distillation{suffix}: SST-2 and a pair task"
    commands = results.get("commands", [])
    results["command"] = "; ".join(dict.fromkeys(entry["command"] for entry in commands))
    results["summary"] = tables(results)


ACCURACY_CAPTIONS = {
    "test": "Held-out test accuracy (%; SST-2: GLUE dev.tsv, SICK: TEST; `sst2_test_split`, "
    "`pair_test_split`), each model evaluated once after all choices were made on dev. "
    "Goals: distilled + augmentation >= plain BiLSTM + 4.0 (SST-2) / + 3.0 "
    "(SICK), and within 3.0 of its teacher. Each student's word vectors: "
    "`sizes.<task>.word_vectors`.",
    "dev": "Dev accuracy (%; the selection set: SST-2 dev carved from train, SICK TRIAL; see "
    "`splits`). Best epochs, n_iter and each student's word vectors (random, or with "
    "the GloVe channel: `sizes.<task>.word_vectors`) were chosen on it. Sizes under "
    "`sizes`.",
}
SPEED_CAPTION = (
    "Speed on CPU (sentences/s, model forward only; goals: student >= 10x the teacher at batch "
    "1, >= 20x at batch 64). Warm-up, median of interleaved rounds, each model at its faster "
    "thread count: `speed_setup`, `speed_threads_used`, `speed_by_threads`."
)


def tables(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The results file's `summary`: accuracy and speed tables, from its keys."""
    tasks = [("SST-2", "sst2")]
    if "pair_task" in results:
        tasks.append((results["pair_task"].split(" (")[0], "pair"))
    found = []
    for split, caption in ACCURACY_CAPTIONS.items():
        rows = []
        for task, prefix in tasks:
            row = [task] + [results.get(f"{prefix}_{split}_acc_{v}") for v in VARIANTS]
            row.append(results.get(f"{prefix}_{split}_gain_distilled_aug_over_bilstm"))
            row.append(results.get(f"{prefix}_{split}_gap_teacher_minus_distilled_aug"))
            rows.append(row)
        columns = ["task", "teacher (MiniLM-L6)", "BiLSTM, gold labels", "distilled"]
        columns += ["distilled + augmentation", "gain over BiLSTM", "teacher - student"]
        if any(value is not None for row in rows for value in row[1:]):
            found.append({"caption": caption, "columns": columns, "rows": rows})
    if results.get("student_speedup_b1") is None:  # a run without the speed stage
        return found
    rows = [
        [name] + [results.get(f"{k}{name}{s}") for k, s in SPEED_KEYS]
        for name in ("teacher", "student")
    ]
    rows.append(
        ["student / teacher", None] + [results.get(f"student_speedup_b{b}") for b in (1, 64)]
    )
    columns = ["model", "parameters", "sentences/s b1", "sentences/s b64"]
    return found + [{"caption": SPEED_CAPTION, "columns": columns, "rows": rows}]


SPEED_KEYS = (("params_", ""), ("sentences_per_sec_", "_b1"), ("sentences_per_sec_", "_b64"))
