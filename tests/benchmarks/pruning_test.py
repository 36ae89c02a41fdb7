"""
The `pruning` study without training (no ../shared/data): a phase 2 that never ended within its
budget misses that headline's goal, a phase-2 run's epochs and prune report are read back, a run's
figures replace the task's, and both stages end to end with `allennlp` stubbed.
"""

import json
from pathlib import Path

import pytest

from benchmarks.harness.data import ROOT
from benchmarks.studies import pruning as bench
from benchmarks.studies import pruning_phase2 as phase2
from benchmarks.studies.pruning import merged_results
from benchmarks.studies.pruning_phase2 import TASKS
from tests.benchmarks.pruning_budget_test import ext_vars


def test_a_phase2_over_budget_misses_the_within_budget_headline():
    from benchmarks.harness.results import load_results

    results = {**load_results("pruning"), "conll00_phase2_within_budget": False}
    lines = {line.figure: line for line in bench.STUDY.summary(results)}
    ner = lines["ner: phase 2 ended within its layer budget"]
    chunk = lines["chunk: phase 2 ended within its layer budget"]
    assert (ner.value, ner.goal, ner.met) == (True, "yes", True)
    assert (chunk.value, chunk.goal, chunk.met) == (False, "yes", False)


def test_run_figures_read_each_epoch_and_the_prune_report(tmp_path):
    run = tmp_path / "chunk_prune"
    run.mkdir()
    epochs = [(4.0, 5.0, -1.0), (3.0, 3.0, -1.0), (2.0, 2.0, 0.940)]
    for epoch, (training, validation, within) in enumerate(epochs):
        metrics = {
            # the last training batch's count comes before its projection; the epoch's
            # validation ran with the checkpoint's masks
            "training_live_layers": training,
            "validation_live_layers": validation,
            "validation_f1-measure-overall-within-budget": within,
        }
        (run / f"metrics_epoch_{epoch}.json").write_text(json.dumps(metrics))
    # epoch 10 sorts after epoch 2 (numeric, not text, order)
    (run / "metrics_epoch_10.json").write_text(json.dumps({"training_live_layers": 1.0}))
    metrics = {"best_epoch": 2, "best_validation_f1-measure-overall-within-budget": 0.94}
    metrics.update(epoch=10, training_duration="1:02:03")
    (run / "metrics.json").write_text(json.dumps(metrics))
    report = {"kept_layers_after": {"lm": {"forward": [0, 3], "backward": []}}}
    report.update(flops_per_token_before=9.0e6, flops_per_token_after=2.0e6)
    report.update(parameters_before=300, parameters_after=100)
    (tmp_path / "report.json").write_text(json.dumps(report))
    found = phase2.run_figures(run, tmp_path / "report.json")
    assert found["live_layers_by_epoch"] == [5.0, 3.0, 2.0, 1.0]
    assert found["dev_f1_within_budget_by_epoch"] == [-1.0, -1.0, 0.940, None]
    assert found["kept_layers_forward"] == [0, 3] and found["kept_layers_backward"] == []
    assert found["phase2_within_budget"] is True and found["flops_ratio"] == 4.5
    assert found["flops_per_token_unpruned"] == 9.0e6 and found["flops_per_token_pruned"] == 2.0e6
    assert found["parameters_unpruned"] == 300 and found["parameters_pruned"] == 100
    assert found["phase2_epochs"] == 11 and found["phase2_best_epoch"] == 2
    assert found["phase2_training_duration"] == "1:02:03"
    metrics["best_validation_f1-measure-overall-within-budget"] = -1.0  # no epoch within budget
    (run / "metrics.json").write_text(json.dumps(metrics))
    assert phase2.run_figures(run, tmp_path / "report.json")["phase2_within_budget"] is False


def test_a_run_replaces_the_tasks_figures_and_keeps_only_what_its_own_run_measured():
    chunk = {"conll00_f1_pruned": 93.0, "conll00_phase1_dir": "runs/c"}  # another task's keys
    first = {
        "phase1_dir": "runs/a",
        "phase2_config": "prune.jsonnet",
        "conll03_f1_pruned": 90.0,
        "words_per_sec_pruned_b32": 7000.0,
        "earlier_phase1": {"phase1_dir": "runs/0"},
        "summary": {"rows": []},
    }
    second = {"phase1_dir": "runs/b", "phase2_config": "prune.jsonnet", "conll03_f1_pruned": 91.0}
    ner = TASKS["ner"]
    # another phase-1 tagger: none of the task's figures is carried over, the other task's stay
    assert merged_results({**chunk, **first}, second, ner, retrained=False) == {**chunk, **second}
    # the same phase-1 tagger and phase 2, not retrained (e.g. --speed-only after --no-speed):
    # what this run did not measure stays
    speed_only = {"phase1_dir": "runs/a", "phase2_config": "prune.jsonnet", "speedup_b32": 3.0}
    kept = merged_results({**chunk, **first}, speed_only, ner, retrained=False)
    assert kept["conll03_f1_pruned"] == 90.0 and kept["speedup_b32"] == 3.0
    assert kept["earlier_phase1"] == first["earlier_phase1"] and "summary" not in kept
    # ... but not when phase 2 was retrained, nor with another phase-2 config or run dir
    assert "conll03_f1_pruned" not in merged_results(first, speed_only, ner, retrained=True)
    other = {**speed_only, "phase2_config": "q.jsonnet"}
    assert "conll03_f1_pruned" not in merged_results(first, other, ner, retrained=False)
    elsewhere = {**speed_only, "phase2_dir": "runs/budget/ner_budget2_ep10"}
    assert "conll03_f1_pruned" not in merged_results(first, elsewhere, ner, retrained=False)
    # the chunking task's keys are prefixed, its F1 keys are not
    chunk_run = {"phase1_dir": "runs/c", "phase2_config": "c.jsonnet", "conll00_f1_pruned": 94.0}
    merged = merged_results(kept, chunk_run, TASKS["chunk"], retrained=True)
    assert merged["conll00_f1_pruned"] == 94.0 and merged["conll00_phase2_config"] == "c.jsonnet"
    assert merged["conll00_phase1_dir"] == "runs/c" and merged["conll03_f1_pruned"] == 90.0


def test_config_differences_name_each_key_and_ignore_how_a_path_is_written():
    root = str(ROOT)
    rendered = {
        "trainer": {"num_epochs": 10, "optimizer": {"lr": 0.006}},
        "model": {"regexes": [["layer_mask", {"budget": 2}]]},
        "vocabulary": {"directory": "runs/p1/vocabulary"},
    }
    same = json.loads(json.dumps(rendered))
    same["vocabulary"]["directory"] = root + "/runs/p1/vocabulary"
    assert phase2.config_differences(rendered, same) == []
    other = json.loads(json.dumps(rendered))
    other["trainer"]["num_epochs"] = 3
    other["model"]["regexes"][0][1]["budget"] = 4
    other["trainer"]["patience"] = 2
    assert phase2.config_differences(rendered, other) == [
        "model.regexes[0][1].budget: 2 != 4",
        "trainer.num_epochs: 10 != 3",
        "trainer.patience: '<absent>' != 2",
    ]


def test_a_phase2_dir_trained_with_another_config_is_refused(tmp_path):
    """`--phase2-dir`: the run's config.json must be `--config` rendered for the phase-1 dir."""
    import _jsonnet

    phase1 = tmp_path / "ner_phase1"
    config = "training_configs/tagging/recipe/ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet"
    env = {**ext_vars(phase1), "NER_LDNET_GLOVE_PHASE1_DIR": str(phase1)}
    rendered = json.loads(_jsonnet.evaluate_file(str(ROOT / config), ext_vars=env))
    run = tmp_path / "ner_budget2_lr0.006_ep10"
    run.mkdir()
    for name in ("model.tar.gz", "metrics.json"):
        (run / name).write_text("{}")
    (run / "config.json").write_text(json.dumps(rendered))
    assert phase2.trained_phase2(run, config, env) == run
    rendered["trainer"]["num_epochs"] = 8
    (run / "config.json").write_text(json.dumps(rendered))
    with pytest.raises(SystemExit, match=r"trainer.num_epochs: 10 != 8"):
        phase2.trained_phase2(run, config, env)
    (run / "metrics.json").unlink()  # not finished
    with pytest.raises(SystemExit, match="no finished run there"):
        phase2.trained_phase2(run, config, env)


def test_the_committed_figures_render_to_the_headlines():
    from benchmarks.harness.results import load_results

    committed = load_results("pruning")
    headlines = {h.key: h for h in bench.STUDY.summary(committed)}
    assert (
        headlines["conll00_phase2_within_budget"].met is committed["conll00_phase2_within_budget"]
    )
    assert headlines["conll03_f1_pruned"].value == committed["conll03_f1_pruned"]


def test_both_stages_train_prune_score_and_merge_once_per_invocation(tmp_path, monkeypatch):
    """The study end to end with `allennlp`, the F1 and the timing stubbed: phase 2 trains once
    (with --epochs as an override), both archives are pruned, the invocation is kept once beside
    the run, and a later --speed-only --no-speed keeps what it did not measure (the timing)."""
    import sys

    from benchmarks.__main__ import run_study
    from benchmarks.harness import allennlp, results

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "results")
    phase1 = tmp_path / "phase1"
    phase1.mkdir()
    (phase1 / "model.tar.gz").write_text("")
    lm = {"forward_lm_archive": "fwd.tar.gz", "backward_lm_archive": "bwd.tar.gz"}
    config = {"model": {"text_field_embedder": {"token_embedders": {"lm": lm}}}}
    (phase1 / "config.json").write_text(json.dumps(config))
    calls = []

    def fake_allennlp(args, log, env=None, threads=0):
        calls.append(args)
        if args[0] == "train":
            out = tmp_path / args[args.index("-s") + 1]
            out.mkdir(parents=True, exist_ok=True)
            (out / "model.tar.gz").write_text("")
            metrics = {"epoch": 1, "best_epoch": 1, "training_duration": "0:02:00"}
            metrics["best_validation_f1-measure-overall-within-budget"] = 0.9
            (out / "metrics.json").write_text(json.dumps(metrics))
            (out / "metrics_epoch_0.json").write_text(json.dumps({"validation_live_layers": 2}))
        elif args[0] == "ldnet-prune":
            Path(args[args.index("-o") + 1]).write_text("pruned")
            if "--report-file" in args:
                report = {
                    "kept_layers_after": {"lm": {"forward": [1], "backward": [4]}},
                    "flops_per_token_before": 4.0e6,
                    "flops_per_token_after": 1.0e6,
                    "parameters_before": 10,
                    "parameters_after": 5,
                }
                Path(args[args.index("--report-file") + 1]).write_text(json.dumps(report))
        else:
            raise AssertionError(args)

    f1 = {"model.tar.gz": 91.0, "ner_ldnet_glove_pruned.tar.gz": 90.5}
    f1["ner_ldnet_glove_pruned_fp16.tar.gz"] = 90.4
    monkeypatch.setattr(allennlp, "run_allennlp", fake_allennlp)
    monkeypatch.setattr(phase2, "evaluated_f1", lambda archive, *_: f1[Path(archive).name])
    monkeypatch.setattr(phase2, "speed", lambda *args: {"speedup_b32": 3.0})
    monkeypatch.setattr(bench, "read_sentences", lambda path: [["a"]])
    monkeypatch.chdir(tmp_path)

    def study(*argv):
        argv = ["pruning", "--phase1-dir", str(phase1), "--out", "out", *argv]
        monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
        from benchmarks.__main__ import build_parser

        run_study(bench.STUDY, build_parser([bench.STUDY]).parse_args(argv))
        return json.loads((tmp_path / "results" / "pruning.json").read_text())

    saved = study("--epochs", "2")
    assert [call[0] for call in calls] == ["train", "ldnet-prune", "ldnet-prune"]
    assert calls[0][calls[0].index("-o") + 1] == '{"trainer.num_epochs": 2}'
    assert "--fp16" in calls[2] and "--reference-lms" in calls[2]
    assert saved["conll03_f1_pruned"] == 90.5 and saved["f1_loss"] == 0.5
    assert saved["flops_ratio"] == 4.0 and saved["kept_layers_backward"] == [4]
    assert saved["phase2_within_budget"] and saved["speedup_b32"] == 3.0
    assert saved["live_layers_by_epoch"] == [2] and saved["phase2_training_duration"] == "0:02:00"
    command = "python -m benchmarks pruning --phase1-dir " + str(phase1) + " --out out"
    assert saved["commands"] == [command + " --epochs 2"]
    assert "summary" not in saved
    calls.clear()
    again = study("--speed-only", "--no-speed")
    assert [call[0] for call in calls] == []  # nothing trained, both archives there
    assert again["speedup_b32"] == 3.0 and again["rounds"] == 5
    assert again["commands"] == [command + " --epochs 2", command + " --speed-only --no-speed"]
    assert again["command"] == again["commands"][-1]
    study("--epochs", "2")  # an invocation run again is kept once, and is this run's command
    assert json.loads((tmp_path / "results" / "pruning.json").read_text())["command"] == (
        command + " --epochs 2"
    )
    assert json.loads((tmp_path / "out" / "ner_ldnet_glove_prune_commands.json").read_text()) == (
        again["commands"]
    )
