import json
import subprocess

import pytest

from benchmarks.harness.study import Headline, Stage, Study, headline, lookup
from benchmarks.report import render as report
from benchmarks.studies import all_studies

RESULTS = {
    "title": "Pruning",
    "commands": ["python -m benchmarks fake --stage train", "python -m benchmarks fake"],
    "hardware": {"cpu": "AMD EPYC", "cpu_count": 2},
    "date": "2026-11-24",
    "f1": {"pruned": 91.8412, "unpruned": 92.1},
    "words_per_sec": 40453.92613909511,
    "earlier_run": {"f1": {"pruned": 80.0}, "command": "python old.py"},
}


def summary(results):
    return [
        headline(results, "CoNLL-03 test F1, pruned", "f1.pruned", ">= 91.0", lambda v: v >= 91),
        headline(results, "words/s, batch 32", "words_per_sec", ">= 50,000", lambda v: v >= 5e4),
        headline(results, "F1 unpruned", "f1.unpruned"),
        Headline("an old figure", 80.0, "earlier_run.f1.pruned"),
    ]


FAKE = Study("fake", "A fake study.", "fake.json", [Stage("train", print)], summary=summary)


def test_a_section_has_the_headline_table_provenance_and_a_link(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "ROOT", tmp_path)
    (tmp_path / "fake.json").write_text(json.dumps(RESULTS))
    text = report.render([FAKE], results_dir=tmp_path)
    assert "## fake\n\nA fake study.\n" in text
    assert "| figure | value | goal | met | JSON key |" in text
    assert "| CoNLL-03 test F1, pruned | 91.84 | >= 91.0 | met | `f1.pruned` |" in text
    assert "| words/s, batch 32 | 40,454 | >= 50,000 | missed | `words_per_sec` |" in text
    assert "| F1 unpruned | 92.1 |  |  | `f1.unpruned` |" in text
    assert "- `python -m benchmarks fake --stage train`" in text
    assert "Date: 2026-11-24" in text and "Hardware: cpu: AMD EPYC, cpu_count: 2" in text
    assert "Raw results: [fake.json](fake.json)" in text
    assert "earlier" not in text and "old.py" not in text  # superseded runs are left out
    assert report.render([FAKE], results_dir=tmp_path) == text  # deterministic


def test_charts_are_embedded_at_the_top_speed_accuracy_first(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "ROOT", tmp_path)
    (tmp_path / "fake.json").write_text(json.dumps(RESULTS))
    charts = {
        "speed_accuracy": tmp_path / "docs/figures/sa.png",
        "layer_masks": tmp_path / "m.png",
        "f1_layers": tmp_path / "f.png",
    }
    text = report.render([FAKE], charts, results_dir=tmp_path)
    order = [
        "![speed accuracy](docs/figures/sa.png)",
        "![f1 layers](f.png)",
        "![layer masks](m.png)",
    ]
    positions = [text.index(line) for line in order]
    assert positions == sorted(positions) and positions[-1] < text.index("## fake")


def test_missing_results_and_unclaimed_files_are_said(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "ROOT", tmp_path)
    (tmp_path / "other.json").write_text("{}")
    (tmp_path / "runs_of_other").mkdir()
    text = report.render([FAKE], results_dir=tmp_path)
    assert "No results yet (`fake.json` is missing)." in text
    assert "- [other.json](other.json)" in text and "- [runs_of_other](runs_of_other)" in text


def test_show_formats_cells():
    assert report.show(True) == "yes" and report.show(None) == "–"
    assert report.show(12345) == "12,345" and report.show(0.72766) == "0.7277"
    assert report.show([1, 2.5]) == "1, 2.5" and report.show("a|b") == "a\\|b"


def test_every_registered_study_renders_and_its_headlines_are_the_json_values():
    for study in all_studies():
        path = report.RESULTS_DIR / study.results_file
        assert path.exists(), f"{study.name}: {path} is missing"
        results = json.loads(path.read_text())
        assert study.summary is not None, f"{study.name} has no summary"
        for line in study.summary(results):
            assert line.value == lookup(results, line.key), (study.name, line)
            assert not report.superseded(line.key), (study.name, line.key)
    text = report.render(all_studies())
    assert len(text.encode("utf-8")) <= report.MAX_BYTES
    for study in all_studies():
        assert f"## {study.name}\n" in text


def test_every_study_has_a_unique_name_and_a_committed_results_file():
    # results files may be shared: tagging, lm_passes and lm_finetune all write tagging.json
    studies = all_studies()
    assert len({s.name for s in studies}) == len(studies)
    assert all((report.RESULTS_DIR / s.results_file).is_file() for s in studies)
    assert "report" not in {s.name for s in studies}


def test_committed_report_and_charts_are_what_the_results_render_to(tmp_path):
    # numbers are never edited by hand: after a benchmark run, `python -m benchmarks report`.
    # A results file without a date of its own shows the day git last committed it, which a
    # shallow clone does not know.
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=report.ROOT, capture_output=True
    )
    if shallow.stdout.strip() != b"false":
        pytest.skip("a shallow clone (or no git) lacks the results files' commit dates")
    expected = report.expected_report(all_studies())
    assert report.REPORT.read_text(encoding="utf-8") == expected
    assert len(expected.encode("utf-8")) <= report.MAX_BYTES
    drawn = report.render_charts(report.RESULTS_DIR, tmp_path)
    for name, path in drawn.items():
        committed = report.FIGURES / path.name
        assert committed.read_bytes() == path.read_bytes(), f"{committed} is out of date"
