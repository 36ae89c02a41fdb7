"""
`python -m benchmarks transfer_set` on the tiny fixture teacher (seconds, no ../shared/data): both
orders label the same rows with the same logits, the results file has the committed file's keys,
and the committed file's headlines come from its own figures.
"""

import json

from benchmarks.__main__ import main
from benchmarks.harness import results as results_module
from benchmarks.harness.results import load_results
from benchmarks.studies import transfer_set
from tests.conftest import FIXTURES_ROOT


def test_the_committed_results_render_to_their_headlines():
    results = load_results("transfer_set_labelling")
    figures = {line.key: line for line in transfer_set.summary(results)}
    assert figures["speedup_length_sorted"].value == results["speedup_length_sorted"]
    assert figures["max_abs_logit_difference"].met is True


def test_the_speed_stage_on_the_fixture_teacher(tmp_path, monkeypatch):
    from tests.distillation.teacher_archive import fixture_teacher_archive

    monkeypatch.setattr(results_module, "RESULTS_DIR", tmp_path)
    train = FIXTURES_ROOT / "distillation" / "sst2" / "sst2_fixture_train.tsv"
    argv = ["transfer_set", "--teacher", fixture_teacher_archive(), "--train", str(train)]
    monkeypatch.setattr("sys.argv", ["benchmarks", *argv, "--rows", "15"])
    main()
    written = json.loads((tmp_path / "transfer_set_labelling.json").read_text())
    committed = load_results("transfer_set_labelling")
    # the committed file also keeps a rendered `summary` table, data that the stage does not write
    assert set(written) == set(committed) - {"summary"}
    assert written["rows"] == 15 and written["rounds"] == 5
    assert written["max_abs_logit_difference"] < transfer_set.LOGIT_TOLERANCE
    assert {len(v) for v in written["seconds_by_round"].values()} == {5}
    assert written["command"] == "python -m benchmarks " + " ".join(argv) + " --rows 15"
