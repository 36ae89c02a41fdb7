import subprocess
import sys

import pytest

from benchmarks.__main__ import main
from benchmarks.harness.study import Stage, Study
from tests.conftest import PROJECT_ROOT


def fake_study(calls):
    def stage(name):
        return Stage(name, lambda args: calls.append((name, args.size)), help=f"does {name}")

    return Study(
        name="fake",
        description="A study that only logs its stages.",
        results_file="fake.json",
        stages=[stage("train"), stage("evaluate"), stage("speed")],
        add_arguments=lambda parser: parser.add_argument("--size", type=int, default=1),
    )


def test_help_lists_the_studies(capsys):
    with pytest.raises(SystemExit):
        main(["--help"], studies=[fake_study([])])
    out = capsys.readouterr().out
    assert "fake" in out and "A study that only logs its stages." in out and "report" in out


def test_all_stages_run_in_order_by_default_with_the_studys_own_arguments():
    calls = []
    main(["fake", "--size", "3"], studies=[fake_study(calls)])
    assert calls == [("train", 3), ("evaluate", 3), ("speed", 3)]


def test_chosen_stages_run_in_the_studys_order():
    calls = []
    main(["fake", "--stage", "speed", "train"], studies=[fake_study(calls)])
    assert calls == [("train", 1), ("speed", 1)]


def test_list_stages_runs_nothing(capsys):
    calls = []
    main(["fake", "--list-stages"], studies=[fake_study(calls)])
    assert calls == [] and "evaluate: does evaluate" in capsys.readouterr().out


def test_an_unknown_stage_is_refused():
    with pytest.raises(SystemExit):
        main(["fake", "--stage", "deploy"], studies=[fake_study([])])


def test_python_m_benchmarks_lists_every_registered_study():
    from benchmarks.studies import all_studies

    process = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for study in all_studies():
        assert study.name in process.stdout
    assert "report" in process.stdout


def test_no_benchmark_module_edits_sys_path():
    for path in (PROJECT_ROOT / "benchmarks").rglob("*.py"):
        assert "sys.path." not in path.read_text(), path
