import json
from pathlib import Path

from benchmarks.make_report import render, section
from tests.conftest import PROJECT_ROOT


def test_benchmarks_md_is_generated_from_the_results_json():
    # BENCHMARKS.md must be exactly what make_report.py renders from benchmarks/results/*.json:
    # numbers are never edited by hand. After a benchmark run: python benchmarks/make_report.py
    assert (PROJECT_ROOT / "BENCHMARKS.md").read_text() == render()


def test_section_shows_every_key_and_the_command():
    text = section("demo", {"command": "python x.py", "f1": 91.8412, "nested": {"a": 1}})
    assert "Command: `python x.py`" in text
    assert "| `f1` | 91.84 |" in text
    assert "| `nested.a` | 1 |" in text


def test_summary_tables_come_first_with_their_captions():
    table = {"columns": ["model", "F1"], "rows": [["a", 90.123], ["b", None]]}
    text = section("demo", {"summary": [dict(table, caption="Accuracy."), table], "f1": 1})
    assert text.count("| model | F1 |") == 2
    assert text.index("Accuracy.") < text.index("| model | F1 |") < text.index("All figures:")
    assert "| a | 90.12 |" in text and "| b | – |" in text
    assert "| `summary" not in text  # the tables are not repeated as keys


def _add_keys(path: str, worker: int, count: int) -> None:
    from benchmarks.common import update_results_file

    for i in range(count):
        update_results_file(
            Path(path),
            lambda current, i=i: {
                f"w{worker}_{i}": i,
                "count": current.get("count", 0) + 1,
            },
        )


def test_parallel_updates_of_a_results_file_lose_nothing(tmp_path):
    import multiprocessing

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
    from benchmarks.common import update_results_file

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"a": 1, "b": 2}))
    update_results_file(path, lambda current: {"a": current["a"] + 1})  # merged
    assert json.loads(path.read_text()) == {"a": 2, "b": 2}
    written = update_results_file(
        path,
        lambda current: {"c": current["a"]},
        finish=lambda results: results.update(total=sum(results.values())),
        replace=True,
    )
    assert written == json.loads(path.read_text()) == {"c": 2, "total": 2}


def test_runs_side_by_side_keep_each_others_changes(tmp_path, monkeypatch):
    import benchmarks.common
    from benchmarks.common import SharedResults

    monkeypatch.setattr(benchmarks.common, "RESULTS_DIR", tmp_path)
    (tmp_path / "d.json").write_text(
        json.dumps({"old": 1, "sizes": {"sst2": {"n": 1}}, "commands": [{"part": "x"}]})
    )
    sst2, sick = SharedResults("d"), SharedResults("d")
    a, b = sst2.load(), sick.load()  # both read the same file, then work side by side
    a["sst2_acc"] = 90.0
    a["sizes"]["sst2"] = {"n": 2}
    a["commands"].append({"part": "sst2"})
    sst2.save(a)
    b["pair_acc"] = 80.0
    b["sizes"]["sick"] = {"n": 3}
    b["commands"].append({"part": "sick"})
    del b["old"]
    written = sick.save(b, finish=lambda r: r.update(count=len(r["commands"])))
    assert written == json.loads((tmp_path / "d.json").read_text())
    assert written == {
        "sst2_acc": 90.0,
        "pair_acc": 80.0,
        "sizes": {"sst2": {"n": 2}, "sick": {"n": 3}},
        "commands": [{"part": "x"}, {"part": "sst2"}, {"part": "sick"}],
        "count": 3,
    }
    # a later save of the first run writes only what it changed since its last save
    a["sst2_acc"] = 91.0
    assert sst2.save(a)["pair_acc"] == 80.0 and "old" not in sst2.save(a)
