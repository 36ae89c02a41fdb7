"""
`python -m benchmarks scalar_mix` without training or real data: the committed file's summary
table and headlines come from its own figures, and a run with `allennlp` and the timed forward
stubbed trains the three taggers for the same epochs and writes the committed file's keys.
"""

import json
import sys
from pathlib import Path

from benchmarks.__main__ import main
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.harness.results import load_results
from benchmarks.studies import scalar_mix


def test_the_committed_results_render_to_their_table_and_headlines():
    results = load_results("scalar_mix")
    assert scalar_mix.table(results) == results["summary"]
    figures = {line.key: line for line in scalar_mix.summary(results)}
    assert figures["conll03_test_f1_scalar_mix"].value == 78.84
    assert figures["words_per_sec_vanilla"].value == results["words_per_sec_vanilla"]


def test_a_stubbed_run_trains_for_equal_epochs_and_writes_the_committed_keys(tmp_path, monkeypatch):
    trained = []

    def fake_train(config, serialization_dir, log, overrides=None, env=None, threads=0):
        trained.append((config, overrides, threads, env["FORWARD_LM_ARCHIVE"]))
        serialization_dir.mkdir(parents=True)
        for epoch in range(overrides["trainer.num_epochs"]):
            (serialization_dir / f"metrics_epoch_{epoch}.json").write_text("{}")
        metrics = {"best_validation_f1-measure-overall": 0.8}
        (serialization_dir / "metrics.json").write_text(json.dumps(metrics))
        (serialization_dir / "model.tar.gz").write_text("archive")
        return True

    def fake_evaluate(archive, data, output, log, **kwargs):
        return {"f1-measure-overall": 0.75}

    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(harness_allennlp, "train", fake_train)
    monkeypatch.setattr(harness_allennlp, "evaluate", fake_evaluate)
    monkeypatch.setattr(scalar_mix, "read_sentences", lambda path: [["a", "b"], ["c"]])
    monkeypatch.setattr(scalar_mix, "tensor_batches", lambda archive, s, size: (lambda: None, [{}]))
    monkeypatch.setattr(scalar_mix, "forward_seconds", lambda model, batches: 0.5)
    lms = []
    for name in ("f.tar.gz", "b.tar.gz"):
        lms.append(tmp_path / name)
        lms[-1].write_text("lm")
    argv = ["scalar_mix", "--epochs", "2", "--out", str(tmp_path / "runs")]
    argv += ["--forward-lm", str(lms[0]), "--backward-lm", str(lms[1])]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    main()
    assert sorted(config for config, *_ in trained) == sorted(scalar_mix.TAGGERS.values())
    overrides = {"trainer.num_epochs": 2, "trainer.patience": 2}
    assert {(json.dumps(o), t, lm) for _, o, t, lm in trained} == {
        (json.dumps(overrides), 1, str(lms[0]))
    }
    written = json.loads((tmp_path / "results" / "scalar_mix.json").read_text())
    assert set(written) == set(load_results("scalar_mix"))
    assert written["conll03_test_f1_ldnet"] == 75.0 and written["conll03_dev_f1_ldnet"] == 80.0
    assert written["words_per_sec_vanilla"] == 6.0  # 3 words in 0.5 s
    assert written["command"] == "python -m benchmarks " + " ".join(argv)
    assert "median of 5 interleaved rounds" in written["speed_setup"]
    # a rescore keeps the recorded training times and trains nothing
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv, "--speed-only"])
    main()
    again = json.loads((tmp_path / "results" / "scalar_mix.json").read_text())
    assert len(trained) == 3
    assert Path(tmp_path / "runs" / "epochs_2" / "stage_seconds.json").exists()
    assert again["train_wallclock_s_ldnet"] == written["train_wallclock_s_ldnet"]
