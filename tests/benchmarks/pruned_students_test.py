"""
`python -m benchmarks pruned_students` without training (seconds, no ../shared/data): the
transfer, train and test stages run their `allennlp` commands once through the shared pipeline
(stubbed here) and record what they measured; the committed results' table is what
`summary_table` computes from the committed figures, and their headlines meet or miss their goals.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.harness.results import load_results
from benchmarks.studies import pruned_students as study


def test_the_committed_table_is_what_summary_table_computes(monkeypatch):
    results = load_results("pruned_students")
    for task in ("ner", "chunk"):
        committed = results[task]["table"]
        pruned_dev = {"f1-measure-overall": committed["pruned"]["dev_f1"] / 100}
        monkeypatch.setattr(harness_allennlp, "evaluate", lambda *args, **kwargs: pruned_dev)
        args = argparse.Namespace(task=task, run=results[task]["student_runs"])
        assert study.summary_table(args, results[task]) == committed


def test_the_headlines_of_the_committed_results():
    results = load_results("pruned_students")
    lines = {line.key: line for line in study.summary(results)}
    student = lines["conll03_test_f1_student"]
    assert student.value == results["conll03_test_f1_student"]
    assert student.goal == ">= 91" and student.met == (student.value >= 91.0)
    assert lines["conll00_test_f1_student"].goal == ">= 95"
    assert lines["conll00_flops_ratio_student_vs_pruned"].goal == "<= 1"
    assert lines["ner.table.student"].value == results["ner"]["table"]["student"]


class FakeAllennlp:
    """Stands in for `run_allennlp`: records every call and writes what the stages read."""

    def __init__(self) -> None:
        self.calls: List[List[str]] = []

    def __call__(self, args, log, env=None, threads=0):
        self.calls.append(list(args))
        log.parent.mkdir(parents=True, exist_ok=True)
        if args[0] == "ldnet-tagging-transfer-set":
            summary = {"labelled_now": 3, "sentences": 3, "seconds": 1.5}
            log.write_text("loading\n" + json.dumps(summary) + "\n")
        elif args[0] == "train":
            out = Path(args[args.index("-s") + 1])
            out.mkdir(parents=True, exist_ok=True)
            for epoch, f1 in enumerate((0.9, 0.925)):
                metrics = {"validation_f1-measure-overall": f1, "training_duration": "0:00:10"}
                (out / f"metrics_epoch_{epoch}.json").write_text(json.dumps(metrics))
            (out / "metrics.json").write_text("{}")
            (out / "model.tar.gz").write_text("")
        elif args[0] == "evaluate":
            output = Path(args[args.index("--output-file") + 1])
            output.write_text(json.dumps({"f1-measure-overall": 0.905}))
        else:
            raise AssertionError(f"unexpected allennlp command {args}")


@pytest.fixture
def study_env(tmp_path, monkeypatch):
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(study, "OUT", tmp_path / "students")
    monkeypatch.setattr(study, "ROOT", tmp_path)  # the transfer stage names paths under it
    monkeypatch.setattr(study, "TRANSFER", tmp_path / "transfer")
    monkeypatch.setattr(study, "NEWS", tmp_path / "transfer" / "news.txt")
    monkeypatch.setattr(study, "start_dir", lambda task: tmp_path / "start")
    fake = FakeAllennlp()
    monkeypatch.setattr(harness_allennlp, "run_allennlp", fake)
    return fake


def run_stage(monkeypatch, *argv: str) -> Dict[str, Any]:
    monkeypatch.setattr(sys, "argv", ["benchmarks", "pruned_students", *argv])
    main()
    return load_results("pruned_students", harness_results.RESULTS_DIR)


def test_transfer_train_and_test_stages(study_env, monkeypatch):
    fake = study_env
    results = run_stage(monkeypatch, "--stage", "transfer", "--transfer-size", "20000")
    assert fake.calls[0][:3] == ["ldnet-tagging-transfer-set", "pretrained:ner"] + [
        "pretrained/teachers/ner_seed2.tar.gz"
    ]
    assert fake.calls[0][-4:] == ["--max-sentences", "20000", "--threads", "1"]
    transfer = results["ner"]["transfer_set"]
    assert transfer["labelled_now"] == 3 and transfer["wall_seconds"] >= 0
    run_stage(monkeypatch, "--stage", "transfer", "--transfer-size", "20000")
    assert len(fake.calls) == 1  # labelled once

    argv = ("--transfer-size", "20000", "--loss", "silver", "--sentences", "5000", "--seed", "2")
    results = run_stage(monkeypatch, "--stage", "train", *argv)
    name = "ner_silver_w1_n5000_e2_lr0.006_seed2"
    run = results["ner"]["runs"][name]
    assert run["dev_f1_by_epoch"] == [90.0, 92.5] and run["best_dev_f1"] == 92.5
    assert run["training_seconds"] == 10.0 and run["seed"] == 2
    assert run["environment"]["TRANSFER_SET_PATH"].endswith("ner_news20k.jsonl")
    assert run["environment"]["TRANSFER_SENTENCES"] == "5000"
    assert run["overrides"] == {"random_seed": 2, "numpy_seed": 2, "pytorch_seed": 2}

    results = run_stage(monkeypatch, "--stage", "test", "--run", name)
    evaluations = [call for call in fake.calls if call[0] == "evaluate"]
    assert len(evaluations) == 1 and evaluations[0][2] == study.TASKS["ner"]["test"]
    assert results["ner"]["runs"][name]["test"]["test_f1"] == pytest.approx(90.5)
    run_stage(monkeypatch, "--stage", "test", "--run", name)
    assert len([call for call in fake.calls if call[0] == "evaluate"]) == 1  # once
    assert [c["wrote"] for c in results["commands"]][-1] == f"ner.runs.{name}.test"
    assert results["date"] == results["commands"][-1]["date"]  # the latest run's, as hardware


def test_the_speed_stage_on_fixture_taggers(tmp_path, monkeypatch):
    fixture_archives = study.ROOT / "fixtures" / "archives"
    rows = {
        "teachers": [fixture_archives / "ner_ldnet.tar.gz", fixture_archives / "ner_ldnet.tar.gz"],
        "unpruned": [fixture_archives / "ner_ldnet.tar.gz"],
        "pruned": [fixture_archives / "ner_ldnet_pruned.tar.gz"],
        "student": [fixture_archives / "ner_ldnet_pruned.tar.gz"],
    }
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(study, "speed_rows", lambda task, student: rows)
    monkeypatch.setattr(study, "run_archive", lambda name: rows["student"][0])
    dev = study.ROOT / "fixtures" / "tagging" / "conll2003_dev.txt"
    monkeypatch.setitem(study.TASKS["ner"], "dev", str(dev))
    results = run_stage(monkeypatch, "--stage", "speed", "--run", "a_student")
    speed = results["ner"]["speed"]
    assert speed["rounds"] == 5 and len(speed["orders"]) == 5 and speed["batch_size"] == 32
    assert speed["orders"][0] == ["teachers", "unpruned", "pruned", "student"]
    words = speed["words"]
    for row, archives in rows.items():
        figures_of_row = speed["rows"][row]
        assert figures_of_row["archives"] == [str(a.relative_to(study.ROOT)) for a in archives]
        low, high = figures_of_row["seconds_spread"]
        assert words / high <= figures_of_row["words_per_second"] <= words / low
    # the teachers' row runs both archives: its FLOPs are theirs summed
    one = speed["rows"]["unpruned"]["flops_per_token"]
    assert speed["rows"]["teachers"]["flops_per_token"] == 2 * one
    assert speed["rows"]["pruned"]["flops_per_token"] < one


def test_restricted_start_keeps_only_the_training_file_words_and_characters(tmp_path, monkeypatch):
    import torch

    train = tmp_path / "train.txt"
    train.write_text("He PRP B-NP\nran VBD B-VP\n\n")
    monkeypatch.setattr(study, "CHUNK_TRAIN", str(train))
    start, out = tmp_path / "start", tmp_path / "out"
    (start / "vocabulary").mkdir(parents=True)
    vocabulary = {"tokens": "he\nzebra\nran", "token_characters": "H\ne\nz", "labels": "B-NP"}
    for namespace, items in vocabulary.items():
        (start / "vocabulary" / f"{namespace}.txt").write_text(f"@@UNKNOWN@@\n{items}\n")
    (start / "config.json").write_text("{}")
    rows = torch.arange(5.0).unsqueeze(1)  # padding, OOV, then the three items of the namespace
    state = {study.EMBEDDINGS["tokens"]: rows, study.EMBEDDINGS["token_characters"]: 10 * rows}
    torch.save({**state, "encoder.weight": torch.ones(2)}, start / "best.th")
    assert study.restricted_start(start, out) == {"tokens": 1, "token_characters": 1}
    written = {path.stem: path.read_text() for path in (out / "vocabulary").glob("*.txt")}
    assert written == {
        "tokens": "@@UNKNOWN@@\nhe\nran\n",  # lowercased words of train.txt; "zebra" dropped
        "token_characters": "@@UNKNOWN@@\nH\ne\n",
        "labels": "@@UNKNOWN@@\nB-NP\n",  # left as it is
    }
    saved = torch.load(out / "best.th")
    assert saved[study.EMBEDDINGS["tokens"]].squeeze(1).tolist() == [0.0, 1.0, 2.0, 4.0]
    assert saved[study.EMBEDDINGS["token_characters"]].squeeze(1).tolist() == [0, 10, 20, 30]
    assert saved["encoder.weight"].tolist() == [1.0, 1.0]
    assert study.restricted_start(start, out) == {}  # made once
