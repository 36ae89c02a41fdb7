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
