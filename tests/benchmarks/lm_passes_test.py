"""
`python -m benchmarks lm_passes` without training: `lm_passes` puts each LM pair of the study
(its passes, tokens and dev perplexity from the LM training logs) beside the shipped LMs' and
the no-LM taggers cut to the same epochs, the report's table reads dev F1 at that epoch, and the
study's headlines come from the committed table.
"""

import argparse
import json

import pytest

from benchmarks.harness import results as harness_results
from benchmarks.harness.results import load_results
from benchmarks.studies import lm_variants as study
from benchmarks.studies import tagging_results as bench
from benchmarks.studies.lm_passes import STUDY
from tests.conftest import PROJECT_ROOT


def section(epochs, command):
    """`lm_passes` as the record stage would write it from the current tagging.json."""
    args = argparse.Namespace(epochs=epochs)
    return study.passes_section(load_results("tagging"), args, command)["lm_passes"]


@pytest.fixture
def results(tmp_path, monkeypatch):
    lm_json = load_results("lm")
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path)
    (tmp_path / "lm.json").write_text(json.dumps(lm_json))
    monkeypatch.setattr(study, "STUDY_DIR", tmp_path / "lm_passes")
    for label, passes, perplexity in (
        ("pass0", 0, 11632.1),
        ("pass1", 1, 190.5),
        ("6x64_pass2", 2, 180.0),
    ):
        out = tmp_path / "lm_passes" / label
        out.mkdir(parents=True)
        for direction in ("forward", "backward"):
            log = {"best_dev_perplexity": perplexity, "passes": []}
            log["passes"] = [
                {"tokens": 1000, "seconds": 10.0, "tokens_per_sec": 100} for _ in range(passes)
            ]
            (out / f"lm_{direction}.json").write_text(json.dumps(log))

    def run(dev):
        record = {"dev_f1_by_epoch": dev, "command": "c", "epochs_trained": len(dev)}
        best = max(range(len(dev)), key=dev.__getitem__)
        return {**record, "dev_f1": dev[best], "best_epoch": best, "test_f1": 80.0}

    bench.write_results(
        {
            "ner_ldnet_glove_sgd": run([88.0, 90.0, 91.0, 92.0]),
            "ner_ldnet_glove_sgd_seed2": run([87.0, 89.5, 91.5]),
            "ner_vanilla_glove_sgd": run([85.0, 87.0, 88.0, 89.0]),
            "ner_ldnet_glove_sgd_extra": run([1.0]),  # neither a seed nor a study run
            "lm_study": {
                "ner_ldnet_glove_sgd_lm-pass1": run([86.0, 88.0]),
                "ner_ldnet_glove_sgd_lm-pass0": run([84.0, 86.5]),
                "ner_ldnet_glove_sgd_lm-6x64_pass2": {**run([85.0, 88.5]), "train_wallclock_s": 30},
                "ner_ldnet_glove_sgd_lm-other": run([1.0]),  # not a study label
                "ner_vanilla_glove_sgd_lm-pass1": run([1.0]),  # another tagger
            },
        }
    )
    return bench


def test_the_study_sits_beside_the_shipped_and_no_lm_taggers_at_equal_epochs(results):
    record = section(2, "python -m benchmarks lm_passes --passes 0 1 --epochs 2")
    runs = [(row["run"], row["lms"] and row["lms"]["passes"]) for row in record["rows"]]
    assert runs == [
        ("ner_vanilla_glove_sgd", None),
        ("ner_ldnet_glove_sgd_lm-6x64_pass2", 2),  # by size, then passes
        ("ner_ldnet_glove_sgd_lm-pass0", 0),
        ("ner_ldnet_glove_sgd_lm-pass1", 1),
        ("ner_ldnet_glove_sgd", 30),
        ("ner_ldnet_glove_sgd_seed2", 30),
    ]
    rows = {row["run"]: row for row in record["rows"]}
    assert rows["ner_ldnet_glove_sgd"]["dev_f1_by_epoch"] == [88.0, 90.0]  # cut to 2 epochs
    lms = rows["ner_ldnet_glove_sgd_lm-pass1"]["lms"]
    assert lms["forward"]["tokens"] == 1000 and lms["backward"]["dev_perplexity"] == 190.5
    assert rows["ner_ldnet_glove_sgd_lm-pass0"]["lms"]["forward"]["tokens"] == 0
    # both directions' CPU seconds: 2 passes x 10 s x 2 directions
    small = rows["ner_ldnet_glove_sgd_lm-6x64_pass2"]["lms"]
    assert (small["num_layers"], small["hidden_size"], small["cpu_hours"]) == (6, 64, 0.01)
    assert lms["cpu_hours"] == round(20 / 3600, 2)
    # the shipped LMs' perplexity comes from lm.json
    lm_json = json.loads((PROJECT_ROOT / "benchmarks/results/lm.json").read_text())
    shipped = rows["ner_ldnet_glove_sgd"]["lms"]["forward"]["dev_perplexity"]
    assert shipped == lm_json["pretrain_accelerated_forward"]["best_dev_perplexity"]
    assert rows["ner_ldnet_glove_sgd"]["lms"]["cpu_hours"] is None  # trained on a GPU

    table = bench.lm_passes_table(record)
    assert table["columns"][6] == "dev F1 at epoch 2"
    by_run = {row[0]: row for row in table["rows"]}
    assert by_run["ner_ldnet_glove_sgd_lm-pass0"][1:] == [
        "6x128",
        0,
        0.0,
        [11632.1, 11632.1],
        [84.0, 86.5],
        86.5,
        86.5,
        None,
    ]
    assert by_run["ner_ldnet_glove_sgd_lm-6x64_pass2"][1:3] == ["6x64", 2]
    assert by_run["ner_ldnet_glove_sgd_lm-6x64_pass2"][-1] == 15  # 30 s over 2 epochs
    assert by_run["ner_vanilla_glove_sgd"][1:4] == ["none", "none", None]


def test_every_command_is_kept_and_the_report_shows_the_table(results):
    first = "python -m benchmarks lm_passes --passes 0 --epochs 2"
    second = "python -m benchmarks lm_passes --passes 1 --epochs 2"
    bench.write_results({"lm_passes": section(2, first)})
    bench.write_results({"lm_passes": section(2, second)})
    written = load_results("tagging")
    assert written["lm_passes"]["commands"] == [first, second]
    assert written["summary"][-1]["caption"].startswith("Dev F1 (CoNLL-03 eng.testa) against LM")


def test_the_late_mean_is_over_the_second_half_of_the_compared_epochs():
    assert bench.late_mean([1.0, 2.0, 3.0, 5.0], 4) == 4.0
    assert bench.late_mean([1.0, 2.0, 4.0], 2) == 2.0  # epochs 2-2 of the first 2
    assert bench.late_mean([1.0, 2.0, 3.0], 4) is None  # fewer epochs than compared


def test_sizes_are_labelled_and_packed_with_the_shipped_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "STUDY_DIR", tmp_path / "lm_passes")
    assert study.label(3, (6, 128)) == "pass3" and study.label(2, (4, 256)) == "4x256_pass2"
    assert study.parse_label("pass3") == (3, (6, 128))
    assert study.parse_label("4x256_pass2") == (2, (4, 256))
    assert study.parse_label("pass") is None and study.parse_label("x_pass1") is None
    pack = tmp_path / "pack"
    (pack / "vocabulary").mkdir(parents=True)
    for name in ("train.npz", "dev.npz"):
        (pack / name).write_text(name)
    encoder = {"input_size": 128, "hidden_size": 128, "num_layers": 6, "dropout": 0.01}
    settings = {
        d: {"encoder": dict(encoder), "projection_dim": 256} for d in ("forward", "backward")
    }
    (pack / "pack.json").write_text(json.dumps({"vocab_size": 9, "model_settings": settings}))
    assert study.sized_pack(pack, (6, 128)) == pack  # the shipped size: the pack itself
    sized = study.sized_pack(pack, (4, 64))
    assert sized == tmp_path / "lm_passes" / "pack_4x64"
    assert (sized / "train.npz").is_symlink() and (sized / "train.npz").read_text() == "train.npz"
    # the vocabulary goes into the LM archives, where a link is refused: a copy
    assert (sized / "vocabulary").is_dir() and not (sized / "vocabulary").is_symlink()
    facts = json.loads((sized / "pack.json").read_text())
    assert facts["vocab_size"] == 9
    for direction in ("forward", "backward"):
        resized = facts["model_settings"][direction]
        assert resized["encoder"] == {**encoder, "hidden_size": 64, "num_layers": 4}
        assert resized["projection_dim"] == 256


def test_the_headlines_are_the_committed_tables_late_means():
    results = load_results("tagging")
    lines = STUDY.summary(results)
    rows = {line.figure.split(": ")[1].split(" (")[0]: line.value for line in lines}
    late = {
        row["run"]: bench.late_mean(row["dev_f1_by_epoch"], 8)
        for row in results["lm_passes"]["rows"]
    }
    assert rows == late
    assert all(line.key.startswith("summary[") for line in lines)


def test_the_record_stage_adds_no_command(results):
    args = argparse.Namespace(epochs=2, stages=["record"])
    (record,) = [stage for stage in STUDY.stages if stage.name == "record"]
    record.run(args)
    assert load_results("tagging")["lm_passes"]["commands"] == []


def test_the_train_stage_trains_each_passes_lms_then_their_tagger(tmp_path, monkeypatch):
    import subprocess
    import sys

    from benchmarks.__main__ import main

    lms, commands = [], []

    def fake_train_lms(passes, size, pack_dir, threads):
        lms.append((passes, size))
        return {
            d: study.ROOT / "runs" / study.label(passes, size) / f"lm_{d}.tar.gz"
            for d in ("forward", "backward")
        }

    def fake_run(command, **kwargs):
        commands.append(list(map(str, command)))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(study, "pack", lambda threads: tmp_path / "pack")
    monkeypatch.setattr(study, "train_lms", fake_train_lms)
    monkeypatch.setattr(study.subprocess, "run", fake_run)
    argv = [
        "lm_passes",
        "--passes",
        "0",
        "2",
        "--lm-size",
        "6x64",
        "--epochs",
        "8",
        "--stage",
        "train",
    ]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    main()
    assert lms == [(0, (6, 64)), (2, (6, 64))]
    assert [c[c.index("--lm-label") + 1] for c in commands] == ["6x64_pass0", "6x64_pass2"]
    assert commands[0][1:6] == ["-m", "benchmarks", "tagging", "--runs", "ner_ldnet_glove_sgd"]
    assert commands[0][commands[0].index("--forward-lm") + 1] == "runs/6x64_pass0/lm_forward.tar.gz"
    with pytest.raises(SystemExit, match="give LAYERSxHIDDEN"):
        main(["lm_passes", "--lm-size", "6by64", "--stage", "train"])
