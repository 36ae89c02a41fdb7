"""
benchmarks/lm_passes_benchmark.py without training: `lm_passes` puts each LM pair of the study
(its passes, tokens and dev perplexity from the LM training logs) beside the shipped LMs' and
the no-LM taggers cut to the same epochs, and the report's table reads dev F1 at that epoch.
"""

import json

import pytest

from benchmarks import lm_passes_benchmark as study
from benchmarks import tagging_benchmark as bench


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "tagging.json")
    monkeypatch.setattr(study, "STUDY", tmp_path / "lm_passes")
    for passes, perplexity in ((0, 11632.1), (1, 190.5)):
        out = tmp_path / "lm_passes" / f"pass{passes}"
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
                "ner_vanilla_glove_sgd_lm-pass1": run([1.0]),  # another tagger
            },
        }
    )
    return bench


def test_the_study_sits_beside_the_shipped_and_no_lm_taggers_at_equal_epochs(results):
    record = study.study(2, "python benchmarks/lm_passes_benchmark.py --passes 0 1 --epochs 2")
    runs = [(row["run"], row["lms"] and row["lms"]["passes"]) for row in record["rows"]]
    assert runs == [
        ("ner_vanilla_glove_sgd", None),
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
    # the shipped LMs' perplexity comes from lm.json
    lm_json = json.loads((bench.ROOT / "benchmarks/results/lm.json").read_text())
    shipped = rows["ner_ldnet_glove_sgd"]["lms"]["forward"]["dev_perplexity"]
    assert shipped == lm_json["pretrain_accelerated_forward"]["best_dev_perplexity"]

    table = bench.lm_passes_table(record)
    assert table["columns"][4] == "dev F1 at epoch 2"
    by_run = {row[0]: row for row in table["rows"]}
    assert by_run["ner_ldnet_glove_sgd_lm-pass0"][1:] == [
        0,
        [11632.1, 11632.1],
        [84.0, 86.5],
        86.5,
        86.5,
    ]
    assert by_run["ner_vanilla_glove_sgd"][1:3] == ["none", None]


def test_every_command_is_kept_and_the_report_shows_the_table(results):
    first = "python benchmarks/lm_passes_benchmark.py --passes 0 --epochs 2"
    second = "python benchmarks/lm_passes_benchmark.py --passes 1 --epochs 2"
    bench.write_results({"lm_passes": study.study(2, first)})
    bench.write_results({"lm_passes": study.study(2, second)})
    written = json.loads(bench.RESULTS.read_text())
    assert written["lm_passes"]["commands"] == [first, second]
    assert written["summary"][-1]["caption"].startswith("Dev F1 (CoNLL-03 eng.testa) against LM")


def test_the_limits_line_gives_the_late_mean_of_each_row(results):
    record = study.study(2, "c")
    line = bench.lm_passes_limit(record)
    # mean over epoch 2 alone (epochs 2-2): the second half of 2 epochs
    assert line.startswith(
        "dev F1 against LM passes (lm_passes), mean over epochs 2-2: no LM: 87.0"
    )
    assert (
        "0 LM passes (LM dev perplexity 11632/11632): 86.5 (ner_ldnet_glove_sgd_lm-pass0)" in line
    )
    assert bench.late_mean([1.0, 2.0, 3.0, 5.0], 4) == 4.0
    assert bench.late_mean([1.0, 2.0, 3.0], 4) is None  # fewer epochs than compared
