"""
The sections of tagging.json that the LM studies add: `lm_passes` (dev F1 against LM size and
passes, `python -m benchmarks lm_passes`) and `lm_finetune_study.<task>` (dev F1 on LMs fine-tuned
on the task's text, `python -m benchmarks lm_finetune`), each as a summary table and a line of
`final_limits`.
"""

from typing import Any, Dict, List, Optional


def late_mean(dev: List[float], epochs: int) -> Optional[float]:
    """Mean dev F1 over the second half of the first `epochs` epochs (less noisy than one)."""
    late = dev[epochs // 2 : epochs]
    return round(sum(late) / len(late), 2) if len(dev) >= epochs else None


def lm_size(lms: Dict[str, Any]) -> str:
    """`6x128`: an LM pair's dense layers x hidden size (records from before the size study
    have the shipped 6x128)."""
    return f"{lms.get('num_layers', 6)}x{lms.get('hidden_size', 128)}"


def lm_passes_limit(study: Dict[str, Any]) -> str:
    """One line of `final_limits`: dev F1 against LM size and passes at equal epochs."""
    epochs, parts = study["epochs"], []
    for row in study["rows"]:
        lms = row["lms"]
        what = "no LM" if lms is None else f"{lm_size(lms)} LMs, {lms['passes']} passes"
        if lms is not None:
            perplexity = "/".join(
                f"{lms[d]['dev_perplexity']:.0f}" for d in ("forward", "backward")
            )
            what += f" (dev perplexity {perplexity}"
            if lms.get("cpu_hours") is not None:
                what += f", {lms['cpu_hours']} CPU-hours"
            what += ")"
        parts.append(f"{what}: {late_mean(row['dev_f1_by_epoch'], epochs)} ({row['run']})")
    return (
        f"dev F1 against LM size and passes (lm_passes), mean over epochs "
        f"{epochs // 2 + 1}-{epochs}: " + "; ".join(parts)
    )


def lm_passes_table(study: Dict[str, Any]) -> Dict[str, Any]:
    """`lm_passes` (python -m benchmarks lm_passes): dev F1 against LM size, passes and
    epochs, with the LMs' training cost."""
    epochs = study["epochs"]
    rows = []
    for row in study["rows"]:
        lms, dev = row["lms"], row["dev_f1_by_epoch"]
        perplexity = None
        if lms:
            perplexity = [lms[d]["dev_perplexity"] for d in ("forward", "backward")]
        seconds = row.get("train_wallclock_s")
        rows.append(
            [
                row["run"],
                "none" if lms is None else lm_size(lms),
                "none" if lms is None else lms["passes"],
                None if lms is None else lms.get("cpu_hours"),
                perplexity,
                dev,
                dev[epochs - 1] if len(dev) >= epochs else None,
                late_mean(dev, epochs),
                seconds and round(seconds / row["epochs_trained"]),
            ]
        )
    return {
        "caption": "Dev F1 (CoNLL-03 eng.testa) against LM size and passes: the final NER recipe "
        "on LMs of the shipped vocabulary and of the shipped size (6 dense layers x 128) or "
        "another, that saw 0 (initialised only) or more passes over the LM corpus, beside the "
        "shipped LMs' taggers and the no-LM taggers over the same first "
        f"{epochs} epochs. LM CPU-hours: both directions' training seconds on this CPU, one "
        "thread each (the shipped LMs trained on a GPU). LM dev perplexity on the LM corpus' "
        "held-out sentences. Tagger s/epoch: its training wall-clock over its epochs (one "
        "thread, beside other jobs; rows trained in different sessions ran on machines of "
        "different speed). Commands: lm_passes.commands and each row's command.",
        "columns": [
            "run",
            "LM size",
            "LM passes",
            "LM CPU-hours",
            "LM dev perplexity (fwd, bwd)",
            "dev F1 by epoch",
            f"dev F1 at epoch {epochs}",
            f"mean dev F1, epochs {epochs // 2 + 1}-{epochs}",
            "tagger s/epoch",
        ],
        "rows": rows,
    }


def lm_finetune_table(task: str, study: Dict[str, Any]) -> Dict[str, Any]:
    """`lm_finetune_study.<task>` (python -m benchmarks lm_finetune): the final recipe's dev F1
    on LMs fine-tuned on the task's training text against the shipped LMs, at equal epochs."""
    epochs, lms = study["epochs"], study["lms"]
    perplexity = {
        "fine-tuned": [lms[d]["dev_perplexity_after"] for d in ("forward", "backward")],
        "shipped": [lms[d]["dev_perplexity_before"] for d in ("forward", "backward")],
    }
    rows = [
        [
            row["lms"],
            row["seed"],
            perplexity[row["lms"]],
            row["dev_f1_by_epoch"],
            row["best_dev_f1"],
            late_mean(row["dev_f1_by_epoch"], epochs),
        ]
        for row in study["rows"]
    ]
    data = "CoNLL-03 eng.testa" if task == "ner" else "the held-out tenth of CoNLL-00 train.txt"
    fine_tuning = ", ".join(
        f"{d}: epoch {lms[d]['best_epoch']} of {lms[d]['epochs']} kept, {lms[d]['seconds']} s"
        for d in ("forward", "backward")
    )
    return {
        "caption": f"{task}: {study['tagger']} on the shipped LMs and on the same LMs fine-tuned "
        f"on the task's training text (ELMo's domain transfer; {fine_tuning}), dev F1 ({data}) "
        f"over the same first {epochs} epochs, by seed. LM dev perplexity (fwd, bwd): on the "
        f"task's dev text ({lms['dev_text']}). Commands: lm_finetune_study.{task}.commands and "
        "each row's command.",
        "columns": [
            "LMs",
            "seed",
            "LM dev perplexity (fwd, bwd)",
            "dev F1 by epoch",
            "best dev F1",
            f"mean dev F1, epochs {epochs // 2 + 1}-{epochs}",
        ],
        "rows": rows,
    }


def lm_finetune_limit(task: str, study: Dict[str, Any]) -> str:
    """One line of `final_limits`: dev F1 on task-fine-tuned against shipped LMs."""
    epochs = study["epochs"]
    parts = [
        f"{row['lms']} LMs, seed {row['seed']}: {late_mean(row['dev_f1_by_epoch'], epochs)}"
        for row in study["rows"]
    ]
    return (
        f"{task} dev F1 on LMs fine-tuned on the task's text (lm_finetune_study), mean over "
        f"epochs {epochs // 2 + 1}-{epochs}: " + "; ".join(parts)
    )
