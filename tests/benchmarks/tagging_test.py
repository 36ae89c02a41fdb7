"""
`python -m benchmarks tagging` without training (seconds, no ../shared/data; `allennlp` stubbed):
`--seed N` trains into its own folder with AllenNLP's three seeds set and records under its own
key, `--dev-only` never evaluates, and the committed tagging.json's derived keys and headlines
come from its own figures.
"""

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import List

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.harness.results import load_results, results_path
from benchmarks.studies import tagging
from benchmarks.studies import tagging_results as bench


class FakeAllenNLP:
    """Stands in for `harness.allennlp.run_allennlp`: records each `allennlp` command and writes
    what `train` would (config.json, one metrics file per epoch, the archive)."""

    def __init__(self):
        self.commands: List[List[str]] = []

    def __call__(self, command, log, env=None, threads=0):
        self.commands.append(list(command))
        out = Path(command[command.index("-s") + 1])
        overrides = json.loads(command[command.index("-o") + 1]) if "-o" in command else {}
        epochs = overrides.get("trainer.num_epochs", 3)
        out.mkdir(parents=True, exist_ok=True)
        config = {"trainer": {"num_epochs": epochs}, "model": {"text_field_embedder": {}}}
        config["model"]["text_field_embedder"]["token_embedders"] = {}
        config.update({k: v for k, v in overrides.items() if k.endswith("_seed")})
        (out / "config.json").write_text(json.dumps(config))
        first = len(list(out.glob("metrics_epoch_*.json")))
        for epoch in range(first, epochs):
            f1 = 0.5 + 0.01 * epoch
            (out / f"metrics_epoch_{epoch}.json").write_text(
                json.dumps({"validation_f1-measure-overall": f1, "training_duration": "0:01:00"})
            )
        (out / f"training_state_e{epochs}_b0.th").write_text("")
        (out / "metrics.json").write_text("{}")
        (out / "model.tar.gz").write_text("archive")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    fake = FakeAllenNLP()
    monkeypatch.setattr(tagging, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(harness_allennlp, "run_allennlp", fake)
    return fake


def run_main(monkeypatch, *argv: str) -> dict:
    monkeypatch.setattr(sys, "argv", ["benchmarks", "tagging", *argv])
    main()
    return json.loads(results_path("tagging").read_text())


def test_a_seed_trains_into_its_own_folder_with_allennlps_three_seeds(fake, monkeypatch):
    args = ("--runs", "ner_vanilla_glove_sgd", "--epochs", "2", "--dev-only")
    run_main(monkeypatch, *args)
    results = run_main(monkeypatch, *args, "--seed", "2")
    assert len(fake.commands) == 2
    default, seeded = (json.loads(c[c.index("-o") + 1]) for c in fake.commands)
    assert default == {"trainer.num_epochs": 2}
    assert seeded == {"trainer.num_epochs": 2, "random_seed": 2, "numpy_seed": 2, "pytorch_seed": 2}
    assert fake.commands[1][fake.commands[1].index("-s") + 1].endswith(
        "ner_vanilla_glove_sgd_seed2"
    )
    search = results["recipe_search"]
    assert search["ner_vanilla_glove_sgd"]["dev_f1_by_epoch"] == [50.0, 51.0]
    assert search["ner_vanilla_glove_sgd_seed2"]["command"] == (
        "python -m benchmarks tagging --runs ner_vanilla_glove_sgd --epochs 2 --seed 2"
        " --dev-only"
    )
    # --dev-only never evaluates
    assert not any(c[0] == "evaluate" for c in fake.commands)


def test_an_lm_label_trains_into_its_own_folder_and_records_under_lm_study(fake, monkeypatch):
    # --lm-label implies --dev-only: the trained archive is never evaluated
    args = ("--runs", "ner_ldnet_glove_sgd", "--epochs", "2", "--lm-label", "pass1")
    args += ("--forward-lm", "f1.tar.gz", "--backward-lm", "b1.tar.gz")
    results = run_main(monkeypatch, *args)
    (command,) = fake.commands
    assert command[command.index("-s") + 1] == str(tagging.RUNS / "ner_ldnet_glove_sgd_lm-pass1")
    record = results["lm_study"]["ner_ldnet_glove_sgd_lm-pass1"]
    assert record["dev_f1_by_epoch"] == [50.0, 51.0]
    assert record["command"] == (
        "python -m benchmarks tagging --runs ner_ldnet_glove_sgd --epochs 2"
        " --lm-label pass1 --dev-only"
    )
    # a study of LMs is not a recipe choice, and its runs never read test
    assert "recipe_search" not in results
    assert not any(c[0] == "evaluate" for c in fake.commands)
    # the same recipe with the default LMs is another run
    run_main(monkeypatch, "--runs", "ner_ldnet_glove_sgd", "--epochs", "2", "--dev-only")
    assert fake.commands[1][fake.commands[1].index("-s") + 1] == str(
        tagging.RUNS / "ner_ldnet_glove_sgd"
    )


def test_an_lm_label_is_refused_as_a_path(fake, monkeypatch, capsys):
    with pytest.raises(SystemExit) as error:
        run_main(monkeypatch, "--runs", "ner_ldnet_glove_sgd", "--lm-label", "a/b")
    assert error.value.code == 2 and "use letters" in capsys.readouterr().err
    assert fake.commands == []


def test_a_run_archived_on_sigterm_resumes_instead_of_counting_as_trained(fake, monkeypatch):
    # what `allennlp train` leaves when it is stopped after 2 of 5 epochs: the best epoch so
    # far archived, checkpoints, no metrics.json
    out = tagging.RUNS / "ner_vanilla_glove_sgd_seed2"
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps({"trainer": {"num_epochs": 5}}))
    for epoch in range(2):
        (out / f"metrics_epoch_{epoch}.json").write_text(
            json.dumps({"validation_f1-measure-overall": 0.5, "training_duration": "0:01:00"})
        )
    (out / "training_state_e1_b0.th").write_text("")
    (out / "model.tar.gz").write_text("best of 2 epochs")
    args = ("--runs", "ner_vanilla_glove_sgd", "--epochs", "5", "--seed", "2", "--dev-only")
    results = run_main(monkeypatch, *args)
    # resumed from its checkpoint, the early archive kept aside
    assert len(fake.commands) == 1 and "--recover" in fake.commands[0]
    assert (out / "model_interrupted.tar.gz").read_text() == "best of 2 epochs"
    assert (out / "model.tar.gz").read_text() == "archive"
    record = results["recipe_search"]["ner_vanilla_glove_sgd_seed2"]
    assert len(record["dev_f1_by_epoch"]) == 5 and record["completed"] is True
    # a finished run (metrics.json written) is not trained again
    run_main(monkeypatch, *args)
    assert len(fake.commands) == 1


def test_wallclock_counts_every_process_of_a_resumed_run(fake):
    out = tagging.RUNS / "ner_vanilla_glove_sgd_seed2"
    out.mkdir(parents=True)
    # two processes: epochs 0-2 (killed), then 3-4; each epoch's duration counts from its start
    durations = ["0:03:00", "0:06:00", "0:09:30", "0:02:50", "0:05:40"]
    for epoch, duration in enumerate(durations):
        (out / f"metrics_epoch_{epoch}.json").write_text(
            json.dumps({"training_duration": duration})
        )
    assert harness_allennlp.training_seconds(out) == 570 + 340
    record = tagging.training_record("ner_vanilla_glove_sgd_seed2")
    assert record["train_wallclock_s"] == 910 and record["epochs_trained"] == 5


def record(test_f1: float) -> dict:
    return {
        "test_f1": test_f1,
        "dev_f1": 93.0,
        "dev_f1_by_epoch": [92.0, 93.0, 92.5],
        "best_epoch": 1,
        "epochs_trained": 3,
        "train_wallclock_s": 360.0,
    }


def test_the_headline_keys_hold_the_mean_over_seeds(fake):
    bench.write_results(
        {
            "conll03_test_f1_ldnet": 81.43,  # an earlier run's figure, replaced
            "ner_ldnet_glove_sgd": record(91.0),
            "ner_ldnet_glove_sgd_seed2": record(90.5),
            "ner_ldnet_glove_sgd_seed2_extra": record(10.0),  # not a seed of the run
            "ner_vanilla_glove_sgd": record(90.0),
        }
    )
    results = load_results("tagging")
    assert results["conll03_test_f1_ldnet"] == 90.75
    assert results["final"]["conll03_test_f1_ldnet"]["test_f1_by_seed"] == {
        "default": 91.0,
        "2": 90.5,
    }
    assert results["conll03_test_f1_vanilla"] == 90.0
    headline = results["summary"][0]
    assert headline["rows"][-1][:4] == [
        "conll03_test_f1_ldnet - conll03_test_f1_vanilla",
        "gain of LD-Net",
        None,
        0.75,
    ]
    assert headline["rows"][-1][5] == "missed"  # the goal is +1.0


def test_ship_exports_the_tagger_as_pretrained_ships_it_and_scores_that_file(fake, monkeypatch):
    out = tagging.RUNS / "ner_ldnet_glove_sgd"
    out.mkdir(parents=True)
    (out / "model.tar.gz").write_text("archive")
    commands = []

    def allennlp(command, log, env=None, threads=0):
        commands.append(list(command))
        if command[0] == "ldnet-prune":
            Path(command[command.index("-o") + 1]).write_text("fp16 archive")
        if command[0] == "evaluate":
            f1 = {"f1-measure-overall": 0.9066}
            Path(command[command.index("--output-file") + 1]).write_text(json.dumps(f1))

    monkeypatch.setattr(harness_allennlp, "run_allennlp", allennlp)
    args = SimpleNamespace(
        seed=None, lm_label=None, forward_lm="f.tar.gz", backward_lm="b.tar.gz", threads=1
    )
    shipped = tagging.ship("ner_ldnet_glove_sgd", args)
    assert shipped == {
        "test_f1_fp16": pytest.approx(90.66),
        "fp16_archive": os.path.relpath(out / "model_fp16.tar.gz", tagging.ROOT),
        "fp16_archive_bytes": len("fp16 archive"),
    }
    prune, evaluate = commands
    assert prune[0:4] == [
        "ldnet-prune",
        str(out / "model.tar.gz"),
        "-o",
        str(out / "model_fp16.tar.gz"),
    ]
    assert {"--keep-all-layers", "--fp16", "--reference-lms"} <= set(prune)
    assert evaluate[0:2] == ["evaluate", str(out / "model_fp16.tar.gz")]
    # done once: a second call reuses the archive and its test metrics
    assert tagging.ship("ner_ldnet_glove_sgd", args) == shipped
    assert len(commands) == 2


def test_reproduce_commands_give_paths_inside_the_project_relative_to_it(fake):
    out = tagging.RUNS / "ner_ldnet_glove_sgd_lm-pass1"
    out.mkdir(parents=True)
    lm = {"forward_lm_archive": str(tagging.ROOT / "runs/lm/f.tar.gz")}
    lm["backward_lm_archive"] = "/elsewhere/b.tar.gz"
    config = {"trainer": {"num_epochs": 8}, "model": {"text_field_embedder": {}}}
    config["model"]["text_field_embedder"]["token_embedders"] = {"lm": lm}
    (out / "config.json").write_text(json.dumps(config))
    assert tagging.reproduce_command("ner_ldnet_glove_sgd", None, "pass1") == (
        "python -m benchmarks tagging --runs ner_ldnet_glove_sgd --epochs 8"
        " --lm-label pass1 --forward-lm runs/lm/f.tar.gz --backward-lm /elsewhere/b.tar.gz"
    )


def test_the_committed_results_regenerate_their_derived_keys_and_headlines():
    text = results_path("tagging").read_text()
    results = json.loads(text)
    bench.finish_results(results)

    assert json.dumps(results, indent=2, sort_keys=True) + "\n" == text
    lines = {line.key: line for line in tagging.summary(results)}
    assert (
        lines["conll03_test_f1_ldnet"].goal == ">= 91"
        and lines["conll03_test_f1_ldnet"].met is False
    )
    gain = lines["summary[0].rows[4][3]"]
    assert gain.value == round(
        results["conll03_test_f1_ldnet"] - results["conll03_test_f1_vanilla"], 2
    )
    assert gain.goal == ">= +1" and gain.met is True
