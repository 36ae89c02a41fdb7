"""benchmarks/studies/export.py: its ratios and goals by hand, and the results file it writes
(the measurements stubbed) against the committed one."""

import pytest

import json
from collections import defaultdict
import sys

from benchmarks.__main__ import build_parser
from benchmarks.harness.results import load_results
from benchmarks.harness.timing import Timings
from benchmarks.studies import export, export_speed, export_timing
from benchmarks.studies.export import GOAL, ratios_and_goals

COMMITTED = load_results("export")
# keys of the committed file that the measure stage no longer writes (its retired_keys_note)
RETIRED = {
    "summary",
    "notes",
    "cold_start_s_runtime_torch_installed",
    "export_bytes",
    "eng_testb_sentences_with_identical_tags",
    "retired_keys_note",
}

SPEED = {
    "allennlp_b1": 1000.0,
    "allennlp_b32": 4000.0,
    "runtime_b1": 5000.0,
    "runtime_b32": 9000.0,
    "spacy_sm_b1": 1000.0,
    "spacy_sm_b32": 2000.0,
}


def test_ratios_and_goals_by_hand():
    cold = {"runtime": 0.8, "runtime_tokens": 1.2}
    speed = dict(SPEED, runtime_unpruned_b1=1000.0, runtime_unpruned_b32=1500.0)
    ratios, met = ratios_and_goals(speed, cold)
    assert ratios == {
        "runtime_speedup_b1": 5.0,
        "runtime_speedup_b32": 2.25,
        "runtime_vs_spacy_b1": 5.0,
        "runtime_vs_spacy_b32": 4.5,
        "allennlp_vs_spacy_b1": 1.0,
        "allennlp_vs_spacy_b32": 2.0,
        "runtime_pruned_vs_unpruned_b1": 5.0,
        "runtime_pruned_vs_unpruned_b32": 6.0,
    }
    assert met == {
        "runtime_speedup_b1": True,  # 5.0 >= 2.0
        "runtime_vs_spacy_b32": True,  # 4.5 >= 3.0
        "runtime_pruned_vs_unpruned_b1": False,  # 5.0 < 6.0
        "runtime_pruned_vs_unpruned_b32": True,  # 6.0 >= 6.0
        "cold_start_s_runtime": True,  # 0.8 s < 1.0 s
        "cold_start_s_runtime_tokens": False,  # 1.2 s
    }
    assert set(met) >= set(GOAL)  # every goal is judged


def committed_args(*extra):
    """The arguments of the committed run (its defaults and its rounds), with `extra`."""
    rounds = ["--rounds", str(COMMITTED["rounds"])]
    return build_parser([export.STUDY]).parse_args(["export", *rounds, *extra])


def run_measure(tmp_path, monkeypatch, output) -> None:
    """The measure stage into `output`, its measurements stubbed with the committed rounds."""
    speed = {
        case: [{"words_per_sec": rate} for rate in rounds]
        for case, rounds in COMMITTED["words_per_sec_rounds"].items()
    }
    cold_runs = export.timing.cold_runs("runs/export/a", "a.tar.gz")
    cold = {case: list(COMMITTED["cold_start_s_rounds"][case]) for case in cold_runs}
    measured = {
        "export": ["allennlp", "ldnet-export", "a.tar.gz", "-o", "runs/export/a"],
        "export_unpruned": ["allennlp", "ldnet-export", "b.tar.gz", "-o", "runs/export/b"],
        "export_seconds": 12.34,
        "same": (3453, 3453, 3453),
        "timed_words": {1: 10, 32: 20},
        "speed": Timings(speed, 5),
        "cold_runs": cold_runs,
        "cold": Timings(cold, 5),
    }
    monkeypatch.setattr(export, "measure", lambda args: measured)
    monkeypatch.setattr(export, "TEST_FILE", tmp_path)
    monkeypatch.setattr(export, "set_threads", lambda threads: None)
    monkeypatch.setattr(sys, "argv", ["benchmarks", "export", "--output", str(output)])
    export.run(committed_args("--output", str(output)))


def test_a_run_writes_the_keys_of_the_committed_file(tmp_path, monkeypatch):
    """run() with the measurements stubbed: the figures are the medians of the rounds, and the
    file has the committed file's keys (but the runtime_venv stage's) and the run's date."""
    output = tmp_path / "export.json"
    run_measure(tmp_path, monkeypatch, output)
    results = json.loads(output.read_text())
    written = set(COMMITTED) - set(export.VENV_KEYS) - set(export_speed.KEYS) - RETIRED
    assert set(results) == written | {"date"}  # run_record's date, which the committed file lacks
    assert set(results["commands"]) == set(COMMITTED["commands"])
    for key in ("words_per_sec_runtime_b1", "words_per_sec_spacy_sm_b32", "cold_start_s_runtime"):
        assert results[key] == COMMITTED[key], key
    for key in ("runtime_vs_spacy_b32", "runtime_pruned_vs_unpruned_b1", "goal_met", "goal"):
        assert results[key] == pytest.approx(COMMITTED[key]), key
    assert results["export_seconds"] == 12.3 and results["identical_tags_eng_testb"]
    assert results["commands"]["benchmark"].startswith("python -m benchmarks export --output")


def test_the_summary_reads_the_committed_results():
    headlines = {h.key: h for h in export.summary(COMMITTED)}
    assert headlines["runtime_vs_spacy_b32"].met is COMMITTED["goal_met"]["runtime_vs_spacy_b32"]
    assert headlines["cold_start_s_runtime"].goal == "< 1"
    assert headlines["identical_tags_eng_testb"].value is True


def test_the_runtime_venv_stage_merges_its_figures_and_measure_keeps_them(tmp_path, monkeypatch):
    """The runtime_venv stage with the venv and the processes stubbed: its keys are merged into
    the file (nothing else changes), their headlines are judged, and a later measure run of the
    same file keeps them."""
    output = tmp_path / "export.json"
    output.write_text(json.dumps({"kept": 1}))
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "a").write_bytes(b"x" * 2_000_000)
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "tagger.json").write_text("{}")
    seconds = {"tokens": iter([0.3, 0.2, 0.4, 0.3, 0.3]), "text": iter([1.2, 0.9, 0.8, 1.0, 0.9])}
    stub = {
        "VENV_DIR": tmp_path / "venv",
        "build_runtime_venv": lambda venv: venv / "bin" / "python",
        "imports_torch": lambda python: False,
    }
    for name, value in stub.items():
        monkeypatch.setattr(export, name, value)

    def cold_start(script, target, json_input, threads, python, cwd):
        assert (script, python, cwd) == (
            "RUNTIME_COLD",
            tmp_path / "venv" / "bin" / "python",
            python.parent,
        )
        return next(seconds["tokens" if "tokens" in json_input else "text"])

    monkeypatch.setattr(export.timing, "cold_start", cold_start)
    monkeypatch.setattr(sys, "argv", ["benchmarks", "export", "--stage", "runtime_venv"])
    args = committed_args(
        "--output", str(output), "--export-dir", str(tmp_path / "export"), "--rounds", "5"
    )
    export.runtime_venv(args)
    results = json.loads(output.read_text())
    assert set(results) == {"kept", *export.VENV_KEYS}
    assert results["runtime_venv_mb"] == 2.0
    assert results["cold_start_s_runtime_venv_tokens"] == 0.3
    assert results["cold_start_s_runtime_venv_text"] == 0.9
    assert results["runtime_venv"]["goal_met"] == {
        "runtime_venv_mb": True,
        "cold_start_s_runtime_venv_tokens": True,
        "cold_start_s_runtime_venv_text": True,
    }
    assert results["runtime_venv"]["command"] == "python -m benchmarks export --stage runtime_venv"
    headlines = {h.key: h for h in export.summary(dict(COMMITTED, **results))}
    assert headlines["runtime_venv_mb"].goal == "<= 500"
    assert headlines["runtime_venv_mb"].met is True

    run_measure(tmp_path, monkeypatch, output)
    rewritten = json.loads(output.read_text())
    expected = set(COMMITTED) - set(export_speed.KEYS) - RETIRED | {*export.VENV_KEYS, "date"}
    assert set(rewritten) == expected
    assert all(rewritten[key] == results[key] for key in export.VENV_KEYS)


def speed_timings(words_per_sec) -> Timings:
    """Five rounds of every case of the speed stage, each sample `words_per_sec(path, size)`."""
    samples = {}
    for size in (1, 32):
        for path in [*export_speed.CASES, "spacy_sm"]:
            samples[f"{path}_b{size}"] = [{"words_per_sec": words_per_sec(path, size)}] * 5
    return Timings(samples, 5)


def test_the_speed_stages_figures_by_hand():
    rates = {
        "default": 60_000.0,
        "fp32": 40_000.0,
        "int8_no_tables": 48_000.0,
        "fp32_no_tables": 32_000.0,
        "unfused_int8": 40_000.0,
        "unfused_fp32": 30_000.0,
        "default_ort_basic": 50_000.0,
        "default_groups_of_8": 48_000.0,
        "default_graph_before": 54_000.0,
        "graph_before_runtime_before": 43_200.0,
        "default_character_cnn_before": 57_600.0,
        "default_boundary_positions": 58_800.0,
        "spacy_sm": 10_000.0,
    }
    found = export_speed.figures(speed_timings(lambda path, size: rates[path] / (1 + (size == 1))))
    assert found["words_per_sec_runtime_b32"] == 60_000.0  # the default export
    assert found["words_per_sec_runtime_b1"] == 30_000.0
    assert found["words_per_sec_fp32_no_tables_b32"] == 32_000.0
    assert found["runtime_vs_spacy_b32"] == 6.0
    assert found["levers"]["int8"] == {"b1": 1.5, "b32": 1.5}
    assert found["levers"]["word_tables"]["b32"] == 1.25
    assert found["levers"]["fused_graph"]["b32"] == 1.2
    assert found["levers"]["all"]["b1"] == 2.0
    assert found["levers"]["ort_enable_all"]["b32"] == 1.2
    assert found["levers"]["token_budget_groups"]["b32"] == 1.25
    assert found["levers"]["runtime_code"] == {"b1": 1.25, "b32": 1.25}
    assert found["levers"]["lean_graph"]["b1"] == 57_600.0 / 54_000.0
    assert found["levers"]["lean_character_cnn"]["b32"] == 58_800.0 / 57_600.0
    assert found["levers"]["boundary_states"]["b32"] == 60_000.0 / 58_800.0


def test_the_runtime_of_a_commit_is_imported_beside_todays(tmp_path):
    import ldnet_runtime

    package = export_speed.runtime_package_at("d9fd127")
    assert package.__name__ == "ldnet_runtime_at_d9fd127"
    assert package.Tagger is not ldnet_runtime.Tagger
    assert package.exported_tagger.__name__ == "ldnet_runtime_at_d9fd127.exported_tagger"
    # the commit's own code: no word rows looked up once for every input then
    assert not hasattr(package.indexing, "TokenRows") and hasattr(
        ldnet_runtime.indexing, "TokenRows"
    )
    assert export_speed.runtime_package_at("d9fd127") is package


def test_the_speed_and_profile_sections_survive_a_measure_run(tmp_path, monkeypatch):
    output = tmp_path / "export.json"
    sections = {"runtime_speed": {"goal": {"f1_int8_loss": 0.1}}, "runtime_profile": {"a": 1}}
    output.write_text(json.dumps(sections))
    run_measure(tmp_path, monkeypatch, output)
    rewritten = json.loads(output.read_text())
    assert {key: rewritten[key] for key in sections} == sections


def test_the_speed_rows_of_the_summary():
    headlines = {h.key: h for h in export_speed.summary(COMMITTED)}
    if "runtime_speed" not in COMMITTED:
        assert headlines == {}
        return
    speed = COMMITTED["runtime_speed"]
    row = headlines["runtime_speed.words_per_sec_runtime_b32"]
    assert row.value == speed["words_per_sec_runtime_b32"] and row.goal == ">= 60000"
    assert row.met is speed["goal_met"]["words_per_sec_runtime_b32"]
    assert headlines["runtime_speed.f1_default_export"].goal == ">= 90"
    assert headlines["runtime_speed.f1_default_export_loss"].goal == "<= 0.1"
    assert headlines["runtime_speed.levers.all.b32"].value == speed["levers"]["all"]["b32"]


def test_the_node_profile_is_summed_by_component_and_operator():
    """onnxruntime's profile events: node kernel times after the warm-up, per word."""

    def node(name, op_type, ts, dur):
        args = {"op_name": op_type}
        return {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur, "args": args}

    events = [
        node("/encoder/layers.0.0/LSTM", "LSTM", 5, 1000),  # warm-up: not counted
        {"cat": "Session", "name": "model_run", "ts": 10, "dur": 90},
        node("/encoder/layers.0.0/LSTM", "LSTM", 11, 40),
        node("/encoder/GatherElements", "GatherElements", 12, 4),
        node("/lm/bilm/forward_lm/layers.0/LSTM", "LSTM", 13, 20),
        node("/lm/bilm/forward_lm/Where", "Where", 14, 2),
        node("/token_characters/convolutions.0/Conv", "FusedConv", 15, 10),
        node("/projection/MatMul", "MatMul", 16, 4),
        {"cat": "Node", "name": "/projection/MatMul_fence_before", "ts": 16, "dur": 0},
    ]
    inputs = [{"tokens": ["a", "b"]}, {"tokens": ["c", "d"]}]  # 4 words
    found = export_speed.summarise_events(events, 10, inputs)
    assert found["us_per_word_by_component"] == {
        "word_bilstm": 10.0,
        "lm_lstm": 5.0,
        "char_cnn": 2.5,
        "word_bilstm_other": 1.0,
        "tag_projection": 1.0,
        "lm_other": 0.5,
    }
    assert found["us_per_word_by_op_type"]["LSTM"] == 15.0
    assert found["top_nodes_us_per_word"][0] == ["/encoder/layers.0.0/LSTM", 10.0]
    assert found["us_per_word_nodes"] == 20.0
    assert found["graph_runs"] == 1 and found["node_runs_per_graph_run"] == 6


def test_the_profile_clock_times_every_step_and_puts_the_tagger_back(tmp_path):
    """The profile stage's clock on the fixtures' pruned export: every step of
    `predict_batch_json` is clocked, the tags stay the same, `restore` puts back the untimed
    steps; the node profile sums the graph's nodes by the components the exporter names."""
    from ldnet_allennlp.onnx_export.exporter import export_tagger
    from ldnet_runtime import Tagger, exported_tagger
    from tests.conftest import FIXTURES_ROOT

    export_tagger(str(FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"), str(tmp_path))
    tagger = Tagger(tmp_path, threads=1)
    inputs = [{"tokens": ["EU", "rejects", "German", "call"]}, {"tokens": ["Peter", "Blackburn"]}]
    expected = tagger.predict_batch_json(inputs * 3)
    untimed = (tagger.session, tagger._indexers, tagger._token_rows, exported_tagger.viterbi_tags)
    seconds = defaultdict(float)
    restore = export_speed.instrument(tagger, seconds)
    steps = export_speed.stage_case(tagger, inputs * 3, 2, seconds)()
    assert tagger.predict_batch_json(inputs * 3) == expected
    restore()
    assert (tagger.session, tagger._indexers, tagger._token_rows) == untimed[:3]
    assert exported_tagger.viterbi_tags is untimed[3]
    indexing = {f"indexing_{name}" for name, _ in tagger._indexers}
    timed = {"input_checks", "indexing_rows", "graph", "viterbi", "spans_and_output", "json"}
    assert set(steps) == timed | indexing | {"other", "total"}
    assert sum(steps.values()) == pytest.approx(2 * steps["total"])  # the steps add up to it
    graph = export_speed.graph_profile(tagger, inputs * 3, 2)
    # with word tables the character CNN runs in its own network, not in the graph
    assert {"word_bilstm", "lm_lstm"} <= set(graph["us_per_word_by_component"])
    labels = {label for label, _, _ in export_speed.COMPONENTS} | {"other_ops"}
    assert set(graph["us_per_word_by_component"]) <= labels
    assert tagger.predict_batch_json(inputs * 3) == expected


def test_a_runtime_path_meets_the_timed_text_as_new_each_round():
    """`NewTextEachRound`: every round (the warm-up call too) loads a tagger, which tags the
    warm-up text first, then the timed batches; nothing of an earlier round's tagger is used."""
    calls = []

    class FakeTagger:
        def __init__(self, number):
            self.number = number

        def predict_batch_json(self, batch):
            calls.append((self.number, [x["tokens"][0] for x in batch]))
            return batch

    loads = iter(range(10))
    path = export_timing.NewTextEachRound(lambda: FakeTagger(next(loads)), [{"tokens": ["w"]}])
    inputs = [{"tokens": [f"t{i}", "x"]} for i in range(3)]
    case = export_timing.timed_pass(path, inputs, 2)
    first, second = case(), case()
    assert calls == [
        (0, ["w"]), (0, ["t0", "t1"]), (0, ["t2"]),
        (1, ["w"]), (1, ["t0", "t1"]), (1, ["t2"]),
    ]  # fmt: skip
    assert first["words_per_sec"] > 0 and second["words_per_sec"] > 0


def test_the_warm_up_is_the_training_files_distinct_words(monkeypatch):
    monkeypatch.setattr(export_timing, "read_sentences", lambda path: [["a", "b", "a"], ["c"]])
    monkeypatch.setattr(export_timing, "WARMUP_WORDS_PER_LINE", 2)
    assert export_timing.warmup_inputs() == [{"tokens": ["a", "b"]}, {"tokens": ["c"]}]
