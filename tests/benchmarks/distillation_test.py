"""
benchmarks/distillation_benchmark.py without training (seconds, no ../shared/data): the dev
carved from SST-2's train is disjoint from the training pool and from the test and the same for
the same seed; the stages run in order with `allennlp` stubbed, and the held-out test is read only
by the final evaluation step; resuming, settings pinning, the earlier results kept, the speed
timing's interleaving.
"""

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import benchmarks.common
from benchmarks import distillation_benchmark as bench

HEADER = "sentence\tlabel\n"


def sst2_rows(count: int, duplicates: int = 0) -> List[str]:
    rows = [
        f"sentence number {i} ,  and {'good' if i % 2 else 'bad'} \t{i % 2}\n" for i in range(count)
    ]
    return rows + rows[:duplicates]  # GLUE's train repeats some sentences


def sentences(rows) -> set:
    return {row.split("\t")[0].strip() for row in rows}


def test_carved_dev_is_disjoint_from_the_pool_and_the_same_for_the_same_seed():
    rows = sst2_rows(200, duplicates=30)
    dev, pool = bench.carve_dev(HEADER, rows, "sentence", 40, seed=13)
    assert len(dev) == len(sentences(dev)) == 40  # distinct sentences, one row each
    assert not sentences(dev) & sentences(pool)
    assert sentences(dev) | sentences(pool) == sentences(rows)
    # the dev's duplicates left with it; every other row stays in the pool, in file order
    assert len(pool) == len(rows) - sum(
        1 for r in rows if r.split("\t")[0].strip() in sentences(dev)
    )
    assert pool == [r for r in rows if r in pool]
    assert bench.carve_dev(HEADER, rows, "sentence", 40, seed=13) == (dev, pool)
    assert bench.carve_dev(HEADER, rows, "sentence", 40, seed=14)[0] != dev
    with pytest.raises(SystemExit):
        bench.carve_dev(HEADER, rows, "sentence", 200, seed=13)


def test_training_subset_and_all():
    pool = [f"{i}\n" for i in range(50)]
    assert bench.choose_rows(pool, None, 13) == pool
    subset = bench.choose_rows(pool, 10, 13)
    assert len(subset) == 10 and subset == sorted(subset, key=pool.index)
    assert subset == bench.choose_rows(pool, 10, 13)
    assert bench.train_size("all") is None and bench.train_size("65") == 65


def test_read_tsv_row_filter_and_line_ends(tmp_path):
    path = tmp_path / "SICK.txt"  # CRLF, no line end after the last row
    path.write_bytes(b"id\tsentence_A\tSemEval_set\r\n1\ta\tTRAIN\r\n2\tb\tTEST\r\n3\tc\tTRAIN")
    header, rows = bench.read_tsv(f"{path}#SemEval_set=TRAIN")
    assert header == "id\tsentence_A\tSemEval_set\n"
    assert rows == ["1\ta\tTRAIN\n", "3\tc\tTRAIN\n"]


class FakeAllennlp:
    """
    Stands in for `run_allennlp`: records every call and writes the outputs the benchmark reads.
    The SST-2 test file (GLUE dev.tsv) does not exist until an `evaluate` call asks for it, so
    any earlier read of it would fail.
    """

    def __init__(self, sst2_test: Path, test_rows: List[str]):
        self.calls: List[Dict[str, Any]] = []
        self.sst2_test, self.test_rows = sst2_test, test_rows
        self.dev_accuracy: Dict[str, float] = {}  # serialization dir name -> best dev accuracy

    def __call__(self, args, log, env=None, threads=0):
        self.calls.append({"args": list(args), "env": dict(env or {})})
        command = args[0]
        if command == "train":
            out = Path(args[args.index("-s") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "config.json").write_text("{}")
            # dev accuracies: n_iter 8 beats n_iter 20, so 8 must be chosen
            accuracy = {"sst2_distilled_aug_n8": 0.9, "sick_distilled_aug_n8": 0.9}.get(
                out.name, 0.8
            )
            accuracy = self.dev_accuracy.get(out.name, accuracy)
            (out / "metrics.json").write_text(json.dumps({"best_validation_accuracy": accuracy}))
            epoch = {"training_duration": "0:00:02.500000"}
            (out / "metrics_epoch_0.json").write_text(json.dumps(epoch))
            (out / "model.tar.gz").write_text("")
        elif command == "distill-transfer-set":
            output = Path(args[3])
            rows = [{"sentence": "a", "augmented": False}, {"sentence": "b", "augmented": True}]
            lines = [
                json.dumps({"transfer_set": {"n_iter": int(args[args.index("--n-iter") + 1])}})
            ]
            output.write_text("\n".join(lines + [json.dumps(r) for r in rows]) + "\n")
        elif command == "evaluate":
            if args[2] == str(self.sst2_test) and not self.sst2_test.exists():
                self.sst2_test.write_text(HEADER + "".join(self.test_rows))
            output = Path(args[args.index("--output-file") + 1])
            output.write_text(json.dumps({"accuracy": 0.75, "loss": 0.5}))
        else:
            raise AssertionError(f"unexpected allennlp command {args}")


@pytest.fixture
def benchmark_env(tmp_path, monkeypatch):
    """Data in tmp_path (SST-2 train.tsv without dev.tsv, a small SICK.txt), results there too."""
    sst2 = tmp_path / "sst2"
    sst2.mkdir()
    (sst2 / "train.tsv").write_text(HEADER + "".join(sst2_rows(120, duplicates=10)))
    sick = tmp_path / "SICK.txt"
    sick_rows = [
        f"{i}\tA man {i} .\tA person {i} .\tNEUTRAL\t{['TRAIN', 'TRIAL', 'TEST'][i % 3]}\n"
        for i in range(60)
    ]
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\n"
    sick.write_text(header + "".join(sick_rows))
    monkeypatch.setenv("SST2_DATA_DIR", str(sst2))
    monkeypatch.setenv("SICK_DATA_PATH", str(sick))
    monkeypatch.setattr(benchmarks.common, "RESULTS_DIR", tmp_path / "results")
    fake = FakeAllennlp(sst2 / "dev.tsv", sst2_rows(300)[200:210])
    monkeypatch.setattr(bench, "run_allennlp", fake)
    monkeypatch.setattr(bench, "RESULTS_NAME", "distillation")
    return tmp_path, fake


def run_main(monkeypatch, *argv: str) -> Dict[str, Any]:
    monkeypatch.setattr(sys, "argv", ["distillation_benchmark.py", *argv])
    bench.main()
    path = benchmarks.common.RESULTS_DIR / "distillation.json"
    return json.loads(path.read_text()) if path.exists() else {}


SST2_ARGS = ("--sst2-dev-size", "20", "--sst2-train-size", "all", "--n-iter", "20", "8")


def test_sst2_stages_in_order_and_the_test_read_only_at_the_end(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = tmp_path / "run"
    results = run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS)
    test = str(tmp_path / "sst2" / "dev.tsv")
    commands = [call["args"][0] for call in fake.calls]
    assert commands == ["train"] + ["distill-transfer-set"] * 2 + ["train"] * 4 + ["evaluate"] * 4
    for call in fake.calls[:-4]:  # no training / labelling command sees the test path
        assert not any(test in str(value) for value in call["args"] + list(call["env"].values()))
    evaluated = [Path(call["args"][1]).parent.name for call in fake.calls[-4:]]
    assert sorted(evaluated) == ["sst2_bilstm", "sst2_distilled", "sst2_distilled_aug_n8"] + [
        "sst2_teacher"
    ]
    assert all(call["args"][2] == test for call in fake.calls[-4:])
    # what the training and selection read: the carved dev and the rest of train.tsv
    data = run_dir / "data" / "sst2"
    dev, train = (bench.read_tsv(str(data / name))[1] for name in ("dev.tsv", "train.tsv"))
    assert len(dev) == 20 and not sentences(dev) & sentences(train)
    assert not (sentences(dev) | sentences(train)) & sentences(bench.read_tsv(test)[1])
    teacher_call = fake.calls[0]
    assert teacher_call["env"]["SST2_DEV_DATA_PATH"] == str(data / "dev.tsv")
    assert json.loads(teacher_call["args"][-1])["train_data_path"] == str(data / "train.tsv")
    # the figures
    for variant in bench.VARIANTS:
        assert results[f"sst2_test_acc_{variant}"] == 75.0
    assert results["sst2_dev_acc_distilled_aug"] == 90.0
    assert results["sst2_dev_acc_distilled_aug_by_n_iter"] == {"8": 90.0, "20": 80.0}
    assert results["sizes"]["sst2"]["n_iter"] == 8
    sizes = results["sizes"]["sst2"]
    assert sizes["train_examples"] == len(train) == sizes["train_pool_rows"]  # all of the pool
    dropped = sizes["rows_dropped_as_duplicates_of_dev_sentences"]
    assert sizes["source_rows"] == 130 == len(dev) + len(train) + dropped
    assert results["sizes"]["sst2"]["teacher_seconds_epoch_0"] == 2.5
    assert results["sst2_test_split"] == f"GLUE SST-2 dev.tsv: {test} (10 examples)"
    assert results["sst2_test_gain_distilled_aug_over_bilstm"] == 0.0
    assert "carved from train.tsv" in results["splits"]["sst2"]
    assert results["commands"][0]["part"] == "sst2"
    assert "--n-iter 20 8" in results["command"]
    assert set(results["stage_seconds"]) >= {"sst2_split", "sst2_test_evaluation"}

    assert results["sizes"]["sst2"]["transfer_set_rows_aug_by_n_iter"] == {"8": 2, "20": 2}
    # a re-run in the same run dir does nothing and gives the same figures
    fake.calls.clear()
    again = run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS)
    assert fake.calls == []
    assert {k: v for k, v in again.items() if k != "stage_seconds"} == {
        k: v for k, v in results.items() if k != "stage_seconds"
    }


def test_sick_test_rows_only_at_the_end(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = tmp_path / "run"
    results = run_main(monkeypatch, "--stage", "sick", "--run-dir", str(run_dir))
    evaluations = [i for i, call in enumerate(fake.calls) if call["args"][0] == "evaluate"]
    assert evaluations == list(range(len(fake.calls) - 4, len(fake.calls)))
    for call in fake.calls[: evaluations[0]]:
        assert not any("=TEST" in str(v) for v in call["args"] + list(call["env"].values()))
    assert all(call["args"][2].endswith("SICK.txt#SemEval_set=TEST") for call in fake.calls[-4:])
    subset = run_dir / "data" / "sick" / "SICK_train_subset.txt"
    rows = bench.read_tsv(str(subset))[1]
    assert len(rows) == 20 and all(row.rstrip("\n").endswith("\tTRAIN") for row in rows)
    assert results["pair_test_split"].endswith("SICK.txt#SemEval_set=TEST (20 examples)")
    assert results["sizes"]["sick"]["n_iter_compared"] == [8, 20]
    assert results["sizes"]["sick"]["dev_rows"] == 20
    assert {f"pair_test_acc_{v}" for v in bench.VARIANTS} <= set(results)


def test_interrupted_training_is_recovered_and_settings_are_pinned(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = tmp_path / "run"
    run_main(monkeypatch, "--stage", "split", "--run-dir", str(run_dir), *SST2_ARGS[:4])
    assert fake.calls == []  # the split alone runs nothing
    teacher = run_dir / "sst2_teacher"
    teacher.mkdir(parents=True)
    (teacher / "config.json").write_text("{}")  # an interrupted `allennlp train`
    run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4])
    teacher_args = fake.calls[0]["args"]
    assert "--recover" in teacher_args and "-f" not in teacher_args
    assert all("-f" in call["args"] for call in fake.calls[1:] if call["args"][0] == "train")
    for changed in (["--seed", "14"], ["--teacher-epochs", "5"], ["--sst2-dev-size", "21"]):
        with pytest.raises(SystemExit, match="other sst2 settings"):
            run_main(
                monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4], *changed
            )
    # a run dir from before the held-out splits is refused
    old = tmp_path / "old"
    (old / "sst2_teacher").mkdir(parents=True)
    with pytest.raises(SystemExit, match="before the held-out splits"):
        run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(old))


def test_a_model_archived_on_sigterm_is_resumed_not_taken_as_trained(benchmark_env, monkeypatch):
    # `allennlp train` stopped after 1 of its epochs archives the best epoch so far: a
    # model.tar.gz with checkpoints and no metrics.json. That teacher must be resumed, and no
    # transfer set labelled with it.
    tmp_path, fake = benchmark_env
    run_dir = tmp_path / "run"
    run_main(monkeypatch, "--stage", "split", "--run-dir", str(run_dir), *SST2_ARGS[:4])
    teacher = run_dir / "sst2_teacher"
    teacher.mkdir(parents=True)
    (teacher / "config.json").write_text("{}")
    (teacher / "training_state_e0_b0.th").write_text("")
    (teacher / "model.tar.gz").write_text("best of 1 epoch")
    run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4])
    first = fake.calls[0]["args"]
    assert first[:2] == ["train", str(bench.CONFIGS / "sst2_teacher.jsonnet")]
    assert "--recover" in first
    assert (teacher / "model_interrupted.tar.gz").read_text() == "best of 1 epoch"
    # a finished run (metrics.json written by the fake) is not trained again
    calls = len(fake.calls)
    run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4])
    assert not any(c["args"][0] == "train" for c in fake.calls[calls:])


def test_stop_after_the_teacher_then_go_on_from_there(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = str(tmp_path / "run")
    results = run_main(
        monkeypatch, "--stage", "sst2", "--run-dir", run_dir, *SST2_ARGS, "--stop-after", "teacher"
    )
    assert [call["args"][0] for call in fake.calls] == ["train"]  # the teacher only
    assert results["sizes"]["sst2"]["stopped_after"] == "teacher"
    assert results["sst2_dev_acc_teacher"] == 80.0
    assert "sst2_test_acc_teacher" not in results and not fake.sst2_test.exists()
    assert results["commands"][0]["command"].endswith("--stop-after teacher")
    # the report shows what was measured: the dev table with the teacher, no empty tables
    (dev_table,) = results["summary"]
    assert dev_table["caption"].startswith("Dev accuracy")
    assert dev_table["rows"] == [["SST-2", 80.0, None, None, None, None, None]]
    results = run_main(monkeypatch, "--stage", "sst2", "--run-dir", run_dir, *SST2_ARGS)
    later = [call["args"][0] for call in fake.calls[1:]]
    assert later[0] == "distill-transfer-set" and later.count("train") == 4  # students only
    assert "stopped_after" not in results["sizes"]["sst2"]
    assert "sst2_test_acc_distilled_aug" in results


def test_word_vectors_chosen_on_dev_per_student(benchmark_env, monkeypatch):
    """
    `--student-word-vectors random glove`: every student also with the GloVe channel (its
    `*_glove` config); per student the better dev accuracy wins, n_iter included, and only the
    winners are evaluated on the test.
    """
    tmp_path, fake = benchmark_env
    fake.dev_accuracy = {"sick_glove_bilstm": 0.85, "sick_glove_distilled_aug_n20": 0.95}
    run_dir = tmp_path / "run"
    argv = ("--stage", "sick", "--run-dir", str(run_dir), "--student-word-vectors")
    results = run_main(monkeypatch, *argv, "random", "glove")
    trains = [c["args"] for c in fake.calls[1:] if c["args"][0] == "train"]
    trained = {Path(args[3]).name: Path(args[1]).name for args in trains}
    assert trained == {
        "sick_bilstm": "sick_bilstm.jsonnet",
        "sick_distilled": "sick_distilled.jsonnet",
        "sick_distilled_aug_n8": "sick_distilled_aug.jsonnet",
        "sick_distilled_aug_n20": "sick_distilled_aug.jsonnet",
        "sick_glove_bilstm": "sick_bilstm_glove.jsonnet",
        "sick_glove_distilled": "sick_distilled_glove.jsonnet",
        "sick_glove_distilled_aug_n8": "sick_distilled_aug_glove.jsonnet",
        "sick_glove_distilled_aug_n20": "sick_distilled_aug_glove.jsonnet",
    }
    evaluated = [Path(c["args"][1]).parent.name for c in fake.calls if c["args"][0] == "evaluate"]
    assert sorted(evaluated) == [
        "sick_distilled",  # 80.0 either way: the tie goes to random vectors
        "sick_glove_bilstm",
        "sick_glove_distilled_aug_n20",
        "sick_teacher",
    ]
    sizes = results["sizes"]["sick"]
    assert sizes["word_vectors"] == {
        "bilstm": "glove",
        "distilled": "random",
        "distilled_aug": "glove",
    }
    assert sizes["n_iter"] == 20
    assert results["pair_dev_acc_bilstm"] == 85.0 and results["pair_dev_acc_distilled"] == 80.0
    assert results["pair_dev_acc_distilled_aug"] == 95.0
    assert results["pair_dev_acc_distilled_aug_by_n_iter"] == {"8": 80.0, "20": 95.0}
    assert results["pair_dev_acc_by_student"]["sick_distilled_aug_n8"] == 90.0
    assert len(results["pair_dev_acc_by_student"]) == 8


def test_stop_after_the_transfer_set_then_go_on_from_there(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = str(tmp_path / "run")
    stop = ("--stop-after", "transfer_set")
    results = run_main(monkeypatch, "--stage", "sst2", "--run-dir", run_dir, *SST2_ARGS, *stop)
    # the teacher, then one transfer set per n_iter
    assert [call["args"][0] for call in fake.calls] == ["train"] + ["distill-transfer-set"] * 2
    sizes = results["sizes"]["sst2"]
    assert sizes["stopped_after"] == "transfer_set"
    transfer = tmp_path / "run" / "transfer"
    rows = {
        n: len((transfer / f"sst2_aug_n{n}.jsonl").read_text().splitlines()) - 1 for n in (8, 20)
    }
    assert sizes["transfer_set_rows_aug_by_n_iter"] == {str(n): rows[n] for n in rows}
    assert "sst2_dev_acc_distilled" not in results and not fake.sst2_test.exists()
    results = run_main(monkeypatch, "--stage", "sst2", "--run-dir", run_dir, *SST2_ARGS)
    later = [call["args"][0] for call in fake.calls[3:]]
    assert later == ["train"] * 4 + ["evaluate"] * 4  # the students, then the test once each
    assert "stopped_after" not in results["sizes"]["sst2"]


def test_earlier_figures_are_kept(benchmark_env, monkeypatch):
    results_dir = benchmarks.common.RESULTS_DIR
    results_dir.mkdir()
    earlier = {
        "sst2_dev_acc_teacher": 82.34,
        "commands": {"sst2": "python benchmarks/distillation_benchmark.py --stage sst2"},
        "sentences_per_sec_teacher_b1": 72.1,
        "earlier_run_weaker_teachers": {"sst2_dev_acc_teacher": 79.93},
    }
    (results_dir / "distillation.json").write_text(json.dumps(earlier))
    tmp_path, _ = benchmark_env
    results = run_main(monkeypatch, "--stage", "sick", "--run-dir", str(tmp_path / "run"))
    kept = results[bench.EARLIER_KEY]
    assert kept["sst2_dev_acc_teacher"] == 82.34 and kept["commands"] == earlier["commands"]
    assert kept["sentences_per_sec_teacher_b1"] == 72.1 and "GLUE dev.tsv" in kept["note"]
    assert results["earlier_run_weaker_teachers"] == earlier["earlier_run_weaker_teachers"]
    assert "sst2_dev_acc_teacher" not in results and "sentences_per_sec_teacher_b1" not in results
    again = run_main(monkeypatch, "--stage", "sick", "--run-dir", str(tmp_path / "run"))
    assert again[bench.EARLIER_KEY] == kept  # moved once, never overwritten


def test_speed_rounds_are_interleaved_after_a_warm_up():
    order = []
    runs = {name: (lambda name=name: order.append(name)) for name in ("teacher", "student")}
    seconds = bench.interleaved_seconds(runs, rounds=5)
    assert order == ["teacher", "student"] * 6  # round 0 is the warm-up
    assert {name: len(values) for name, values in seconds.items()} == {"teacher": 5, "student": 5}


def test_speed_stage_on_the_fixtures(benchmark_env, monkeypatch):
    # the real speed stage: the tiny fixture teacher and the student config, 5 rounds at 1 and 2
    # threads; the timing sentences are an unlabelled file, not a split a figure is measured on
    from tests.distillation.conftest import DISTILLATION_FIXTURES

    tmp_path, _ = benchmark_env
    monkeypatch.setenv("TEACHER_MODEL_PATH", str(DISTILLATION_FIXTURES / "tiny_bert"))
    unlabelled = tmp_path / "sst2" / "test.tsv"
    unlabelled.write_text(
        "index\tsentence\n" + "".join(f"{i}\tnew words {i} here\n" for i in range(9))
    )
    results = run_main(
        monkeypatch, "--stage", "speed", "--run-dir", str(tmp_path / "run"), *SST2_ARGS[:4]
    )
    assert not (tmp_path / "sst2" / "dev.tsv").exists()  # the SST-2 test was never needed
    for key in ("teacher_b1", "teacher_b64", "student_b1", "student_b64"):
        threads = results["speed_threads_used"][key]
        assert threads in (1, 2)
        assert (
            results[f"sentences_per_sec_{key}"]
            == results["speed_by_threads"][f"{key}_threads{threads}"]
        )
    assert set(results["speed_by_threads"]) >= {
        "student_speedup_b64_threads2",
        "teacher_b1_threads1",
    }
    assert "9 sentences" in results["speed_setup"]["data"] and "5 interleaved rounds" in (
        results["speed_setup"]["timing"]
    )
    assert results["params_teacher"] < 100_000  # the tiny fixture BERT, not MiniLM
    assert results["commands"] == [
        {"part": "speed", "command": results["command"], "run_dir": str(tmp_path / "run")}
    ]


def test_more_n_iter_later_adds_only_the_new_ones(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    run_dir = tmp_path / "run"
    run_main(
        monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4], "--n-iter", "8"
    )
    fake.calls.clear()
    results = run_main(
        monkeypatch, "--stage", "sst2", "--run-dir", str(run_dir), *SST2_ARGS[:4], "--n-iter", "20"
    )
    # the new transfer set (output = args[3]) and student (-s dir = args[3]); no evaluation,
    # as the dev choice stays n_iter 8, already scored
    outputs = [Path(call["args"][3]).name for call in fake.calls]
    assert outputs == ["sst2_aug_n20.jsonl", "sst2_distilled_aug_n20"]
    assert results["sizes"]["sst2"]["n_iter"] == 8  # chosen on dev among 8 (earlier) and 20
    assert results["sizes"]["sst2"]["n_iter_compared"] == [8, 20]
    assert results["sizes"]["sst2"]["transfer_set_rows_aug"] == 2


def test_a_task_run_in_another_run_dir_keeps_the_earlier_figures(benchmark_env, monkeypatch):
    tmp_path, fake = benchmark_env
    first = run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(tmp_path / "a"), *SST2_ARGS)
    sick = run_main(monkeypatch, "--stage", "sick", "--run-dir", str(tmp_path / "a"))
    fake.dev_accuracy["sst2_distilled_aug_n20"] = 0.95  # the other run chooses n_iter 20
    results = run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(tmp_path / "b"), *SST2_ARGS)
    earlier = results["earlier_sst2_run_a"]
    assert earlier["run_dir"] == str(tmp_path / "a")
    for key in ("sst2_dev_acc_distilled_aug", "sst2_test_acc_teacher", "sst2_test_split"):
        assert earlier[key] == first[key]
    assert earlier["sizes"] == first["sizes"]["sst2"]
    assert earlier["test_evaluations"] == first["test_evaluations"]["sst2"]
    assert set(earlier["stage_seconds"]) == {k for k in first["stage_seconds"] if "sst2" in k}
    assert [c["run_dir"] for c in earlier["commands"]] == [str(tmp_path / "a")]
    # the new figures are run b's; SICK's (run a) are untouched
    assert (
        results["sst2_dev_acc_distilled_aug"] == 95.0 and results["sizes"]["sst2"]["n_iter"] == 20
    )
    assert results["run_dirs"] == {"sst2": str(tmp_path / "b"), "sick": str(tmp_path / "a")}
    assert results["pair_test_acc_teacher"] == sick["pair_test_acc_teacher"]
    assert results["sizes"]["sick"] == sick["sizes"]["sick"]
    assert [(c["part"], Path(c["run_dir"]).name) for c in results["commands"]] == [
        ("sick", "a"),
        ("sst2", "b"),
    ]
    assert f"--stage sst2 --run-dir {tmp_path / 'a'}" not in results["command"]
    assert f"--stage sst2 --run-dir {tmp_path / 'b'}" in results["command"]
    # a re-run in b moves nothing more
    again = run_main(monkeypatch, "--stage", "sst2", "--run-dir", str(tmp_path / "b"), *SST2_ARGS)
    assert again["earlier_sst2_run_a"] == earlier
    assert not [key for key in again if key.startswith("earlier_sst2_run_b")]


def test_speed_figures_from_another_run_dir_are_kept():
    results = {
        "sentences_per_sec_student_b1": 900.0,
        "student_speedup_b1": 12.0,
        "speed_setup": {"data": "x"},
        "params_student": 10,
        "sst2_test_acc_teacher": 91.0,
        "stage_seconds": {"speed": 60.0, "sst2_split": 0.1},
        "commands": [
            {"part": "sst2", "command": "c1", "run_dir": "runs/x"},
            {"part": "speed", "command": "c2", "run_dir": "runs/x"},
        ],
    }
    bench.keep_earlier_part_run(results, "speed", Path("runs/x"))  # the same run dir: nothing
    assert "student_speedup_b1" in results
    bench.keep_earlier_part_run(results, "speed", Path("runs/y"))
    assert results["earlier_speed_run_x"] == {
        "run_dir": "runs/x",
        "sentences_per_sec_student_b1": 900.0,
        "student_speedup_b1": 12.0,
        "speed_setup": {"data": "x"},
        "params_student": 10,
        "stage_seconds": {"speed": 60.0},
        "commands": [{"part": "speed", "command": "c2", "run_dir": "runs/x"}],
    }
    assert results["sst2_test_acc_teacher"] == 91.0
    assert results["stage_seconds"] == {"sst2_split": 0.1}
    assert results["commands"] == [{"part": "sst2", "command": "c1", "run_dir": "runs/x"}]
