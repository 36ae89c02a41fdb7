"""
The distillation study's results file (`benchmarks/studies/distillation.py`): earlier runs kept
under `earlier_*` keys, the commands that wrote figures, and the keys derived from all tasks'
figures (gains, `title`, `command`, the `summary` tables), recomputed on every save.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from benchmarks.harness.results import command_line
from benchmarks.studies.distillation_data import VARIANTS

# where the figures measured before the held-out splits are kept (see keep_earlier_run)
EARLIER_KEY = "earlier_run_selected_on_glue_dev"
# the top-level keys each part writes (besides its run dir, stage seconds and commands)
PART_KEY_PREFIXES = {
    "sst2": ("sst2_",),
    "sick": ("pair_",),
    "speed": ("params_", "sentences_per_sec_", "speed_", "student_speedup_"),
}
# the nested records kept per task, under the task's name
PART_NESTED = ("sizes", "splits", "run_dirs", "test_evaluations")


def keep_earlier_run(results: Dict[str, Any]) -> None:
    """
    A results file from before the held-out splits (dev keys, no `splits` note): its figures
    move under EARLIER_KEY, so that the new run overwrites nothing of them.
    """
    if "splits" in results or not any(k.startswith(("sst2_dev_", "pair_dev_")) for k in results):
        return
    kept = ("earlier_run_weaker_teachers", EARLIER_KEY, "title", "summary")
    earlier = {key: results.pop(key) for key in list(results) if key not in kept}
    earlier["note"] = (
        "the run before the held-out splits: SST-2 students' epochs and n_iter were chosen on "
        "GLUE dev.tsv, on which the sst2_dev_acc_* figures were also measured; SICK's on TRIAL "
        "(pair_dev_acc_*), TEST never used; speed as best of 3 passes at 1 thread and 1 pass "
        "at 2 threads"
    )
    results[EARLIER_KEY] = earlier


def previous_run_dir(results: Dict[str, Any], part: str) -> Optional[str]:
    """The run dir this part's figures in `results` came from (the last command that wrote it)."""
    if part in results.get("run_dirs", {}):
        return results["run_dirs"][part]
    commands = results.get("commands", [])
    dirs = [c.get("run_dir") for c in commands if isinstance(c, dict) and c.get("part") == part]
    return dirs[-1] if dirs else None


def keep_earlier_part_run(results: Dict[str, Any], part: str, run_dir: Path) -> None:
    """
    A part ("sst2", "sick" or "speed") run in another run dir than the one its figures came from
    replaces them: the earlier figures, their stage seconds and commands move under
    `earlier_<part>_run_<run dir name>` first, so that nothing measured is lost.
    """
    previous = previous_run_dir(results, part)
    if previous is None or previous == str(run_dir):
        return
    task = "sick" if part == "sick" else "sst2"  # the stage-seconds prefix
    earlier: Dict[str, Any] = {"run_dir": previous}
    for key in list(results):
        if key.startswith(PART_KEY_PREFIXES[part]) or (part == "sick" and key == "pair_task"):
            earlier[key] = results.pop(key)
    for key in PART_NESTED:
        if part in results.get(key, {}):
            earlier[key] = results[key].pop(part)
    seconds = results.get("stage_seconds", {})
    moved = [k for k in seconds if (k == "speed" if part == "speed" else k.startswith(task + "_"))]
    if moved:
        earlier["stage_seconds"] = {k: seconds.pop(k) for k in moved}
    commands = results.get("commands", [])
    if isinstance(commands, list):
        earlier["commands"] = [c for c in commands if c.get("part") == part]
        results["commands"] = [c for c in commands if c.get("part") != part]
    results[f"earlier_{part}_run_{Path(previous).name}"] = earlier


def record_command(results: Dict[str, Any], parts: Sequence[str], run_dir: Path) -> None:
    """Every invocation that wrote figures, in order (`commands`; `command` joins them)."""
    commands = results.setdefault("commands", [])
    if isinstance(commands, dict):  # the older {part: command} form
        commands = results["commands"] = [
            {"part": part, "command": command} for part, command in commands.items()
        ]
    for part in parts:
        entry = {"part": part, "command": command_line(), "run_dir": str(run_dir)}
        if entry not in commands:
            commands.append(entry)


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
    results["title"] = f"Tang et al. distillation{suffix}: SST-2 and a pair task (issues 7, 18)"
    commands = results.get("commands", [])
    results["command"] = "; ".join(dict.fromkeys(entry["command"] for entry in commands))
    results["summary"] = tables(results)


ACCURACY_CAPTIONS = {
    "test": "Held-out test accuracy (%; SST-2: GLUE dev.tsv, SICK: TEST; `sst2_test_split`, "
    "`pair_test_split`), each model evaluated once after all choices were made on dev. "
    "Goals (issue 18): distilled + augmentation >= plain BiLSTM + 4.0 (SST-2) / + 3.0 "
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
