import json
import multiprocessing
from pathlib import Path

import pytest

from benchmarks.harness import results as results_module
from benchmarks.harness.results import (
    command_line,
    load_results,
    results_path,
    run_record,
    write_results,
)
from benchmarks.harness.runs import pin_settings


def _add_keys(path: str, worker: int, count: int) -> None:
    for i in range(count):
        write_results(
            Path(path),
            lambda current, i=i: {f"w{worker}_{i}": i, "count": current.get("count", 0) + 1},
        )


def test_parallel_updates_of_a_results_file_lose_nothing(tmp_path):
    path = tmp_path / "results" / "shared.json"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_add_keys, args=(str(path), w, 40)) for w in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    results = json.loads(path.read_text())
    assert results["count"] == 120  # every read-modify-write saw the one before it
    assert len([key for key in results if key.startswith("w")]) == 120
    assert [p.name for p in path.parent.iterdir()] == ["shared.json"]  # no lock or temp file left


def test_a_replacing_update_drops_what_it_leaves_out_and_finish_sees_the_result(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"a": 1, "b": 2}))
    write_results(path, lambda current: {"a": current["a"] + 1})  # merged
    assert json.loads(path.read_text()) == {"a": 2, "b": 2}
    written = write_results(
        path,
        lambda current: {"c": current["a"]},
        finish=lambda results: results.update(total=sum(results.values())),
        replace=True,
    )
    assert written == json.loads(path.read_text()) == {"c": 2, "total": 2}


def test_runs_side_by_side_keep_each_others_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(results_module, "RESULTS_DIR", tmp_path)
    (tmp_path / "d.json").write_text(
        json.dumps({"old": 1, "sizes": {"sst2": {"n": 1}}, "commands": [{"part": "x"}]})
    )
    a, b = load_results("d"), load_results("d.json")  # both read the file, then work side by side
    since_a, since_b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
    a["sst2_acc"] = 90.0
    a["sizes"]["sst2"] = {"n": 2}
    a["commands"].append({"part": "sst2"})
    write_results("d", a, since=since_a)
    b["pair_acc"] = 80.0
    b["sizes"]["sick"] = {"n": 3}
    b["commands"].append({"part": "sick"})
    del b["old"]
    written = write_results(
        "d.json", b, since=since_b, finish=lambda r: r.update(count=len(r["commands"]))
    )
    assert written == json.loads((tmp_path / "d.json").read_text())
    assert written == {
        "sst2_acc": 90.0,
        "pair_acc": 80.0,
        "sizes": {"sst2": {"n": 2}, "sick": {"n": 3}},
        "commands": [{"part": "x"}, {"part": "sst2"}, {"part": "sick"}],
        "count": 3,
    }
    # a later write of the first run, since its last one, writes only what it changed
    since_a = json.loads(json.dumps(a))
    a["sst2_acc"] = 91.0
    again = write_results("d", a, since=since_a)
    assert again["sst2_acc"] == 91.0 and again["pair_acc"] == 80.0 and "old" not in again


def test_load_and_save_by_name_with_or_without_the_suffix(tmp_path):
    assert results_path("x", tmp_path) == results_path("x.json", tmp_path) == tmp_path / "x.json"
    assert load_results("x", tmp_path) == {}
    write_results("x", {"c": 0}, tmp_path)
    write_results("x", {"b": 1, "a": [1, 2]}, tmp_path, replace=True)
    assert (tmp_path / "x.json").read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    assert load_results("x.json", tmp_path) == {"a": [1, 2], "b": 1}


def test_each_run_records_its_command_date_and_hardware():
    assert command_line(["pruning", "--stage", "speed", "a b"]) == (
        "python -m benchmarks pruning --stage speed 'a b'"
    )
    first = run_record(command="python -m benchmarks pruning", part="speed")
    assert first["command"] == "python -m benchmarks pruning"
    assert first["part"] == "speed" and first["date"][:2] == "20"
    assert {"cpu", "cpu_count", "torch_threads"} <= set(first["hardware"])


def test_pinned_settings_stop_a_run_with_other_settings(tmp_path):
    pin_settings(tmp_path, {"epochs": 3})
    pin_settings(tmp_path, {"epochs": 3, "seed": 1}, name="settings")  # the same, and one more
    assert json.loads((tmp_path / "settings.json").read_text()) == {"epochs": 3, "seed": 1}
    with pytest.raises(SystemExit, match=r"other settings .*'epochs': \(3, 4\)"):
        pin_settings(tmp_path, {"epochs": 4})
