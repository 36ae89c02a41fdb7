"""
benchmarks/pruning_benchmark.py's reporting without training (no ../shared/data): a phase 2 that
never ended within its budget is never called "pruned", and a phase-2 run's epochs are read back
(live layers from the epoch's validation, dev F1, commands) from its serialization dir.
"""

import json

from benchmarks import pruning_benchmark as bench


def task_results(prefix: str, f1_key: str, within: bool) -> dict:
    results = {
        f"{f1_key}_unpruned": 94.6,
        f"{f1_key}_pruned": 93.25,
        f"{prefix}flops_per_token_unpruned": 9.0e6,
        f"{prefix}flops_per_token_pruned": 2.0e6,
        f"{prefix}kept_layers_forward": [0, 1],
        f"{prefix}kept_layers_backward": [4] if not within else [],
        f"{prefix}phase2_within_budget": within,
    }
    return results


def test_a_phase2_over_budget_is_never_labelled_pruned():
    results = task_results("", "conll03_f1", within=True)
    results.update(task_results("conll00_", "conll00_f1", within=False))
    rows = bench.summary(results)["rows"]
    labels = {(row[0], row[1]) for row in rows}
    ner, chunk = bench.TASKS["ner"]["title"], bench.TASKS["chunk"]["title"]
    assert labels == {
        (ner, "unpruned"),
        (ner, "pruned"),
        (chunk, "unpruned"),
        (chunk, "masked, NOT within budget"),
    }
    chunk_masked = next(row for row in rows if row[1] == "masked, NOT within budget")
    assert chunk_masked[2] == "fwd [0, 1] / bwd [4]"
    assert chunk_masked[3] == 93.25


def test_phase2_summary_reads_each_epoch(tmp_path):
    run = tmp_path / "chunk_prune"
    run.mkdir()
    epochs = [(4.0, 5.0, 0.936, -1.0), (3.0, 3.0, 0.941, -1.0), (2.0, 2.0, 0.940, 0.940)]
    for epoch, (training, validation, f1, within) in enumerate(epochs):
        metrics = {
            # the last training batch's count comes before its projection; the epoch's
            # validation ran with the checkpoint's masks
            "training_live_layers": training,
            "validation_live_layers": validation,
            "validation_f1-measure-overall": f1,
            "validation_f1-measure-overall-within-budget": within,
        }
        (run / f"metrics_epoch_{epoch}.json").write_text(json.dumps(metrics))
    # epoch 10 sorts after epoch 2 (numeric, not text, order)
    (run / "metrics_epoch_10.json").write_text(json.dumps({"training_live_layers": 1.0}))
    commands = ["allennlp train x.jsonnet -s chunk_prune"]
    (tmp_path / "chunk_prune_commands.json").write_text(json.dumps(commands))
    summary = bench.phase2_summary(run)
    assert summary["epochs"] == 4
    assert summary["completed"] is False
    assert summary["live_layers_by_epoch"] == [5.0, 3.0, 2.0, 1.0]
    assert summary["dev_f1_by_epoch"] == [0.936, 0.941, 0.940, None]
    assert summary["dev_f1_within_budget_by_epoch"] == [-1.0, -1.0, 0.940, None]
    assert summary["commands"] == commands
    (run / "metrics.json").write_text("{}")
    assert bench.phase2_summary(run)["completed"] is True
