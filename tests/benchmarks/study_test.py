import json
import subprocess

import pytest

from benchmarks.harness.allennlp import duration_seconds
from benchmarks.harness.data import MissingData, data_path, read_sentences
from benchmarks.harness.study import (
    Headline,
    at_least,
    at_most,
    headline,
    lookup,
    provenance,
    superseded,
)
from tests.conftest import PROJECT_ROOT

RESULTS = {"conll03": {"test_f1": 91.2, "rows": [{"f1": 90.0}, {"f1": 92.5}]}, "n": 3}


def test_lookup_follows_dots_and_list_indices():
    assert lookup(RESULTS, "n") == 3
    assert lookup(RESULTS, "conll03.test_f1") == 91.2
    assert lookup(RESULTS, "conll03.rows[1].f1") == 92.5
    assert lookup({"a": [[1, 2], [3]]}, "a[0][1]") == 2
    with pytest.raises(KeyError, match="conll03.dev_f1"):
        lookup(RESULTS, "conll03.dev_f1")
    with pytest.raises(KeyError):
        lookup(RESULTS, "conll03.rows[5].f1")


def test_a_headline_records_the_key_its_value_came_from():
    line = headline(RESULTS, "CoNLL-03 test F1", "conll03.test_f1", ">= 91.0", lambda v: v >= 91)
    assert line == Headline("CoNLL-03 test F1", 91.2, "conll03.test_f1", ">= 91.0", True)
    assert headline(RESULTS, "rows", "n").met is None
    assert headline(RESULTS, "F1", "conll03.test_f1", *at_least(91.5)) == Headline(
        "F1", 91.2, "conll03.test_f1", ">= 91.5", False
    )
    assert headline(RESULTS, "n", "n", *at_most(3, " s")).goal == "<= 3 s"
    assert headline(RESULTS, "n", "n", "== 3", met=True).met is True


def test_superseded_runs_are_named_by_their_keys():
    for key in (
        "earlier_run.f1",
        "conll00_earlier_phase1.f1",
        "previous_cpu_lms.ppl",
        "a[0].earlier",
    ):
        assert superseded(key), key
    for key in ("f1", "conll00_f1", "earliest", "rows[0].previously"):
        assert not superseded(key), key


def test_provenance_reads_every_spelling_of_command_date_and_hardware():
    records = {
        "commands": [{"command": "python -m benchmarks x", "part": "a"}, "python y.py"],
        "hardware": {"cpu": "EPYC"},
        "started_utc": "2026-11-22T03:26:08+00:00",
        "earlier_run": {"command": "old", "date": "2020-01-01"},
    }
    assert provenance(records) == {
        "command": ["python -m benchmarks x", "python y.py"],
        "date": "2026-11-22T03:26:08+00:00",
        "hardware": {"cpu": "EPYC"},
    }
    parts = {"commands": {"benchmark": "b.py", "cold": {"x": "c1", "y": "c2"}}, "hardware": "h"}
    assert provenance(parts)["command"] == ["b.py", "c1", "c2"]
    per_task = {"ner": {"commands": ["n.py"]}, "chunk": {"commands": ["c.py"]}, "hardware": "h"}
    assert provenance(per_task)["command"] == ["n.py"]
    assert provenance({"command": "only.py"}) == {
        "command": ["only.py"],
        "date": None,
        "hardware": None,
    }


# published_anchors.json holds figures published elsewhere (each with its source and hardware,
# tests/benchmarks/charts_test.py), not measured by a command here
MEASURED = sorted(
    path
    for path in (PROJECT_ROOT / "benchmarks" / "results").glob("*.json")
    if path.name != "published_anchors.json"
)


@pytest.mark.parametrize("path", MEASURED, ids=[path.name for path in MEASURED])
def test_every_results_file_has_a_command_and_hardware(path):
    found = provenance(json.loads(path.read_text()), path)
    assert found["command"] and found["hardware"]
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=PROJECT_ROOT, capture_output=True
    )
    if shallow.stdout.strip() == b"false":
        assert found["date"]


def test_data_paths_name_the_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_DATA_PATH", str(tmp_path / "absent.txt"))
    with pytest.raises(MissingData, match="set SOME_DATA_PATH"):
        data_path("SOME_DATA_PATH", "x.txt")
    (tmp_path / "here.txt").write_text("-DOCSTART- O\n\nEU B-ORG\nrejects O\n\n\nPeter B-PER")
    monkeypatch.setenv("SOME_DATA_PATH", str(tmp_path / "here.txt"))
    assert read_sentences(data_path("SOME_DATA_PATH", "x.txt")) == [["EU", "rejects"], ["Peter"]]


def test_allennlp_training_durations_with_and_without_days():
    assert duration_seconds("0:00:05.5") == 5.5
    assert duration_seconds("12:00:00") == 43200.0
    assert duration_seconds("1 day, 2:03:04.25") == 93784.25
    assert duration_seconds("3 days, 0:00:01") == 259201.0
