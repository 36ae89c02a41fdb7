"""
`python -m benchmarks scalar_mix` without training or real data: with `allennlp` and the timed
forward stubbed, the stages train the scalar-mix tagger's two seeds with the recipe config,
prune the seed best on dev, and write the means, the pruning loss and the speed-ups computed
from the runs, the tagging study's runs and the manifest; the committed file renders to its
headlines.
"""

import json
import sys

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.harness.results import load_results
from benchmarks.studies import scalar_mix

REAL_RESULTS = harness_results.RESULTS_DIR


def test_the_committed_results_render_to_their_headlines():
    results = load_results("scalar_mix")
    figures = {line.key: line for line in scalar_mix.summary(results)}
    seeds = [results["seeds"][f"scalar_mix_seed{s}"]["test_f1"] for s in scalar_mix.SEEDS]
    assert figures["conll03_test_f1_scalar_mix"].value == round(sum(seeds) / 2, 2)
    gap = figures["test_f1_gap_ldnet_minus_scalar_mix"]
    assert gap.met == (gap.value <= 0.5)


def stub_the_study(tmp_path, monkeypatch):
    """`allennlp` and the timing stubbed; returns the lists of trainings and commands run."""
    trained, commands = [], []
    dev = {"scalar_mix_seed1": 0.93, "scalar_mix_seed2": 0.94, "scalar_mix_pruned": 0.935}
    test = {"scalar_mix_seed1": 0.90, "scalar_mix_seed2": 0.91, "scalar_mix_pruned": 0.908}

    def fake_train(config, serialization_dir, log, overrides=None, env=None, threads=0):
        trained.append((config, serialization_dir.name, overrides, env, threads))
        serialization_dir.mkdir(parents=True)
        for epoch in range(3):
            (serialization_dir / f"metrics_epoch_{epoch}.json").write_text("{}")
        metrics = {"best_validation_f1-measure-overall": dev[serialization_dir.name]}
        metrics["best_epoch"] = 2
        (serialization_dir / "metrics.json").write_text(json.dumps(metrics))
        (serialization_dir / "model.tar.gz").write_text("archive")
        return True

    def fake_run(args, log, env=None, threads=0):
        commands.append(args)
        (tmp_path / "runs" / "scalar_mix_pruned" / "pruned.tar.gz").write_text("pruned")

    def fake_evaluate(archive, data, output, log, **kwargs):
        return {"f1-measure-overall": test[archive.parent.name]}

    def fake_speed(args, archives):
        speeds = {"no_lm": 5.0, "ldnet": 1.0, "ldnet_pruned": 4.0, "scalar_mix": 1.0}
        speeds["scalar_mix_pruned"] = 3.0
        return {name: speeds[name] for name in ["no_lm", *archives]}

    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(scalar_mix, "load_results", lambda name: load_results(name, REAL_RESULTS))
    monkeypatch.setattr(harness_allennlp, "train", fake_train)
    monkeypatch.setattr(harness_allennlp, "run_allennlp", fake_run)
    monkeypatch.setattr(harness_allennlp, "evaluate", fake_evaluate)
    monkeypatch.setattr(scalar_mix, "words_per_sec", fake_speed)
    monkeypatch.setattr(scalar_mix, "kept_layers", lambda a: {"forward": [4], "backward": [3]})
    return trained, commands


def test_a_stubbed_study_trains_prunes_and_measures(tmp_path, monkeypatch):
    trained, commands = stub_the_study(tmp_path, monkeypatch)
    argv = ["scalar_mix", "--out", str(tmp_path / "runs")]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    main()

    seed_runs = [t for t in trained if t[1].startswith("scalar_mix_seed")]
    assert {t[0] for t in seed_runs} == {scalar_mix.CONFIGS["scalar_mix"]}
    assert {t[1]: t[2] for t in seed_runs} == {
        "scalar_mix_seed1": {},
        "scalar_mix_seed2": {"random_seed": 2, "numpy_seed": 2, "pytorch_seed": 2},
    }
    assert all(t[3]["FORWARD_LM_ARCHIVE"] == "pretrained:lm_forward" and t[4] == 1 for t in trained)
    (prune,) = [t for t in trained if t[1] == "scalar_mix_pruned"]
    assert prune[0] == scalar_mix.PRUNE_CONFIG
    # seed 2 is better on dev: it is the one pruned
    phase1 = prune[3]["NER_SCALAR_MIX_GLOVE_PHASE1_DIR"]
    assert phase1 == str(tmp_path / "runs" / "scalar_mix_seed2")
    assert commands[0][0] == "ldnet-prune"

    written = json.loads((tmp_path / "results" / "scalar_mix.json").read_text())
    tagging = load_results("tagging", REAL_RESULTS)
    ldnet = [
        tagging["ner_ldnet_glove_sgd"]["test_f1"],
        tagging["ner_ldnet_glove_sgd_seed2"]["test_f1"],
    ]
    assert written["conll03_test_f1_scalar_mix"] == 90.5
    assert written["conll03_test_f1_ldnet"] == round(sum(round(f, 2) for f in ldnet) / 2, 2)
    assert written["conll03_f1_loss_scalar_mix_pruned"] == 0.2  # 91.0 - 90.8
    assert written["scalar_mix_pruned"]["phase1_seed"] == 2
    assert written["speedup_scalar_mix_pruned"] == 3.0 and written["speedup_ldnet_pruned"] == 4.0
    figures = {line.key: line for line in scalar_mix.summary(written)}
    assert figures["conll03_f1_loss_scalar_mix_pruned"].met is True
    assert figures["test_f1_gap_ldnet_minus_scalar_mix"].goal == "<= 0.5"


def test_measure_before_the_pruning_finished_stops(tmp_path, monkeypatch):
    trained, _ = stub_the_study(tmp_path, monkeypatch)
    argv = ["scalar_mix", "--out", str(tmp_path / "runs"), "--stage", "train", "measure"]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    with pytest.raises(SystemExit, match="run --stage prune first"):
        main()
    assert len(trained) == 2  # the two seeds, no pruning
    assert not (tmp_path / "results" / "scalar_mix.json").exists()
