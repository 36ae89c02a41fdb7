import json

import numpy
import pytest

from benchmarks.harness.results import RESULTS_DIR
from benchmarks.report import charts

EXPORT = {
    "archive": "pretrained/small_pruned.tar.gz",
    "unpruned_archive": "pretrained/small.tar.gz",
    "words_per_sec_runtime_b1": 200.0,
    "words_per_sec_runtime_b32": 400.0,
    "words_per_sec_runtime_unpruned_b1": 50.0,
    "words_per_sec_runtime_unpruned_b32": 80.0,
    "words_per_sec_allennlp_b1": 20.0,
    "words_per_sec_allennlp_b32": 60.0,
    "words_per_sec_spacy_sm_b1": 30.0,
    "words_per_sec_spacy_sm_b32": 90.0,
    "runtime_speed": {
        "words_per_sec_runtime_b1": 300.0,
        "words_per_sec_runtime_b32": 600.0,
        "f1_default_export": 90.125,
    },
}
MANIFEST = {
    "small": {"file": "small.tar.gz", "test_f1": 91.5, "kept_layers": {"forward": [0, 1, 2]}},
    "small_pruned": {"file": "small_pruned.tar.gz", "test_f1": 90.25},
}
ANCHORS = {
    "anchors": [
        {"name": "A", "conll03_test_f1": 92.0, "words_per_sec": 1000, "hardware": "GPU"},
        {"name": "B", "conll03_test_f1": 93.0, "words_per_sec": None, "hardware": "not stated"},
    ]
}
BUDGET = {
    "ner": {
        "chosen_run_on_dev": "ner_b2_ep10",
        "test_f1_unpruned": 91.0,
        "rows": [
            {
                "run": "ner_b4",
                "kept_layers_forward": [1],
                "kept_layers_backward": [0, 2],
                "test_f1_pruned": 89.5,
                "epochs": 3,
            },
            {
                "run": "ner_b2_ep10",
                "kept_layers_forward": [1],
                "kept_layers_backward": [2],
                "test_f1_pruned": 90.5,
                "epochs": 10,
            },
        ],
    }
}
PRUNING = {
    "live_layers_by_epoch": [3.0, 2.0],
    "kept_layers_forward": [1],
    "kept_layers_backward": [2],
    "title": "LD-Net pruning: small NER",
}


def write(folder, name, data):
    (folder / name).write_text(json.dumps(data))


def test_measured_points_are_the_export_json_values_and_the_manifest_f1():
    points = charts.measured_speed_points(EXPORT, MANIFEST)
    assert [(p.label, p.words_per_sec_b1, p.words_per_sec_b32, p.f1) for p in points] == [
        ("ner_pruned, ldnet_runtime, default export (int8)", 300.0, 600.0, 90.125),
        ("ner, ldnet_runtime, fp32", 50.0, 80.0, 91.5),
        ("ner_pruned, ldnet_runtime, fp32", 200.0, 400.0, 90.25),
        ("ner_pruned, AllenNLP predictor", 20.0, 60.0, 90.25),
        ("spaCy en_core_web_sm", 30.0, 90.0, None),  # no F1 measured: none is drawn
    ]


def test_published_anchors_are_kept_apart_from_the_measured_points(tmp_path, monkeypatch):
    anchors = charts.anchor_points(ANCHORS)
    assert [(a.name, a.f1, a.words_per_sec) for a in anchors] == [
        ("A", 92.0, 1000),
        ("B", 93.0, None),
    ]
    drawn = {}

    def spy(points, anchors, path):
        drawn.update(points=points, anchors=anchors)
        return path

    monkeypatch.setattr(charts, "speed_accuracy_chart", spy)
    write(tmp_path, "export.json", EXPORT)
    write(tmp_path, "published_anchors.json", ANCHORS)
    (tmp_path / "manifest.json").write_text(json.dumps(MANIFEST))
    charts.render_charts(tmp_path, tmp_path / "out", tmp_path / "manifest.json")
    assert all(isinstance(p, charts.SpeedPoint) for p in drawn["points"])
    assert {p.label for p in drawn["points"]}.isdisjoint(a.name for a in drawn["anchors"])
    assert drawn["anchors"] == anchors


def test_budget_points_are_the_rows_with_their_live_layers():
    points = charts.budget_points(BUDGET, "ner")
    assert [(p.run, p.live_layers, p.test_f1, p.epochs, p.chosen) for p in points] == [
        ("ner_b2_ep10", 2, 90.5, 10, True),
        ("ner_b4", 3, 89.5, 3, False),
    ]
    assert charts.budget_points(BUDGET, "chunk") == []


def test_mask_states_mark_kept_pruned_and_unknown_layers():
    runs = charts.pruning_runs(PRUNING, MANIFEST | {"ner": MANIFEST["small"]})
    assert [(title, live) for title, _, live in runs] == [("small NER", [3.0, 2.0])]
    states = runs[0][1]
    u, k, p = charts.UNKNOWN, charts.LIVE, charts.PRUNED
    numpy.testing.assert_array_equal(states["forward"], [[u, p], [k, k], [u, p]])
    numpy.testing.assert_array_equal(states["backward"], [[u, p], [u, p], [k, k]])
    with pytest.raises(ValueError):
        charts.mask_states([1.0], {"forward": [0], "backward": [1]}, 3)


def test_the_charts_are_drawn_from_small_json_and_the_same_json_gives_the_same_bytes(tmp_path):
    for name, data in (
        ("export.json", EXPORT),
        ("published_anchors.json", ANCHORS),
        ("pruning_budget.json", BUDGET),
        ("pruning.json", PRUNING),
    ):
        write(tmp_path, name, data)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(MANIFEST | {"ner": MANIFEST["small"]}))
    first = charts.render_charts(tmp_path, tmp_path / "a", manifest)
    second = charts.render_charts(tmp_path, tmp_path / "b", manifest)
    assert sorted(first) == ["f1_vs_layers", "layer_masks", "speed_accuracy"]
    for name, path in first.items():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.read_bytes() == second[name].read_bytes()
        assert b"matplotlib" not in path.read_bytes()  # no software name in the metadata


def test_every_chart_is_drawn_from_the_committed_json(tmp_path):
    drawn = charts.render_charts(RESULTS_DIR, tmp_path)
    assert sorted(drawn) == ["f1_vs_layers", "layer_masks", "lm_more_text", "speed_accuracy"]
    assert all(path.stat().st_size > 10_000 for path in drawn.values())


def test_the_committed_anchors_each_name_a_source_and_hardware():
    anchors = json.loads((RESULTS_DIR / "published_anchors.json").read_text())["anchors"]
    for anchor in anchors:
        assert anchor["source"] and anchor["hardware"] and 0 < anchor["conll03_test_f1"] < 100


def test_the_more_text_chart_reads_the_recipes_curves_and_the_lms_perplexities(tmp_path):
    tagging = {
        "recipe_search": {
            "ner_ldnet_glove_sgd": {"dev_f1_by_epoch": [90.0, 91.0]},
            "ner_ldnet_glove_sgd_seed2": {"dev_f1_by_epoch": [90.5]},
            "ner_vanilla_glove_sgd": {"dev_f1_by_epoch": [80.0]},
        },
        "lm_study": {
            "ner_ldnet_glove_sgd_lm-more_text_final": {"dev_f1_by_epoch": [92.0, 93.0]},
            "ner_ldnet_glove_sgd_lm-more_text_final_seed2": {"dev_f1_by_epoch": [92.5]},
            "ner_ldnet_glove_sgd_lm-cpu_more_final": {"dev_f1_by_epoch": [1.0]},
            "chunk_ldnet_glove_sgd_lm-more_text_final": {"dev_f1_by_epoch": [94.0]},
        },
    }
    curves = charts.more_text_curves(tagging, "ner_ldnet_glove_sgd")
    assert curves == [
        charts.DevCurve("ner_ldnet_glove_sgd", [90.0, 91.0], None),
        charts.DevCurve("ner_ldnet_glove_sgd_seed2", [90.5], None),
        charts.DevCurve("ner_ldnet_glove_sgd_lm-more_text_final", [92.0, 93.0], "more_text_final"),
        charts.DevCurve("ner_ldnet_glove_sgd_lm-more_text_final_seed2", [92.5], "more_text_final"),
    ]
    run = {"direction": "forward", "held_out_perplexity": {"wikipedia": 100.04, "wikinews": 9.96}}
    lm = {
        "more_text": {
            "runs": [
                {**run, "run": "lm_score_cpu_more_final", "best_dev_perplexity": 95.0},
                {**run, "direction": "backward", "run": "lm_score_cpu_more_final"},
                {
                    "run": "lm_score_shipped",
                    "direction": "forward",
                    "held_out_perplexity": {"wikipedia": 176.0, "wikinews": 154.6},
                    "best_dev_perplexity": 86.7,
                },
            ]
        }
    }
    assert charts.more_text_caption(lm) == (
        "Forward LM perplexity, continued (shipped): wikinews 10.0 (154.6), wikipedia 100.0 "
        "(176.0), the old corpus's dev split 95.0 (86.7). (lm.json, more_text)"
    )
    assert charts.more_text_caption({}) == ""
    assert charts.conll_perplexity_curves(lm) == []  # no run scored CoNLL-03's dev text
    write(tmp_path, "tagging.json", tagging)
    write(tmp_path, "lm.json", lm)
    drawn = charts.render_charts(tmp_path, tmp_path / "out", tmp_path / "no_manifest.json")
    assert list(drawn) == ["lm_more_text"]
    assert drawn["lm_more_text"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_conll_perplexity_panel_reads_curves_and_levels(tmp_path):
    """A continuation's curve points that scored CoNLL-03's dev text (tokens in millions), a
    run of no passes as one level; points and runs without that set are left out."""
    point = {"tokens_seen": 1_500_000, "held_out_perplexity": {"conll03_dev": 101.5}}
    lm = {
        "more_text": {
            "runs": [
                {
                    "run": "lm_cpu_news", "direction": "forward", "tokens_seen": 3_000_000,
                    "curve": [
                        {"tokens_seen": 500_000, "dev_perplexity": 90.0},
                        point,
                        {"tokens_seen": 3_000_000, "held_out_perplexity": {"conll03_dev": 99.9}},
                    ],
                    "held_out_perplexity": {"conll03_dev": 99.0},
                },
                {
                    "run": "lm_score_shipped", "direction": "backward", "tokens_seen": 0,
                    "curve": [], "held_out_perplexity": {"conll03_dev": 103.7},
                },
                {"run": "lm_cpu_more", "direction": "forward", "tokens_seen": 9, "curve": []},
                {"run": "lm_old", "direction": "forward", "tokens_seen": 0, "curve": []},
            ]
        }
    }  # fmt: skip
    assert charts.conll_perplexity_curves(lm) == [
        charts.PerplexityCurve("lm_cpu_news", "forward", [1.5, 3.0], [101.5, 99.9]),
        charts.PerplexityCurve("lm_score_shipped", "backward", None, [103.7]),
    ]
    tagging = {
        "lm_study": {
            f"{task}_ldnet_glove_sgd_lm-more_text_final": {"dev_f1_by_epoch": [94.0]}
            for task in ("ner", "chunk")
        }
    }
    write(tmp_path, "tagging.json", tagging)
    write(tmp_path, "lm.json", lm)
    drawn = charts.render_charts(tmp_path, tmp_path / "out", tmp_path / "no_manifest.json")
    assert drawn["lm_more_text"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_gain_panel_is_each_lm_sets_mean_best_dev_f1_less_the_shipped_lms():
    """Per task: the mean over seeds of the best dev F1 on each LM set, less the shipped LMs'
    mean, at the forward LM's CoNLL-03 dev perplexity (a level, or a continuation's last point);
    a set whose LMs have no such perplexity, and a task without shipped runs, are left out."""
    tagging = {
        "recipe_search": {
            "ner_ldnet_glove_sgd": {"dev_f1_by_epoch": [93.0, 94.0]},
            "ner_ldnet_glove_sgd_seed2": {"dev_f1_by_epoch": [93.5, 93.0]},
        },
        "lm_study": {
            "ner_ldnet_glove_sgd_lm-news_final": {"dev_f1_by_epoch": [94.5, 94.25]},
            "ner_ldnet_glove_sgd_lm-news_final_seed2": {"dev_f1_by_epoch": [93.75]},
            "ner_ldnet_glove_sgd_lm-more_text_final": {"dev_f1_by_epoch": [93.0]},
            "chunk_ldnet_glove_sgd_lm-news_final": {"dev_f1_by_epoch": [95.0]},
        },
    }
    curves = [
        charts.PerplexityCurve("lm_score_shipped", "forward", None, [107.5]),
        charts.PerplexityCurve("lm_score_shipped", "backward", None, [103.7]),
        charts.PerplexityCurve("lm_cpu_news", "forward", [1.5, 3.0], [101.5, 94.8]),
    ]
    assert charts.forward_conll_perplexity(curves, "lm_cpu_news") == 94.8
    assert charts.forward_conll_perplexity(curves, "lm_score_cpu_more_final") is None
    # shipped: (94.0 + 93.5) / 2 = 93.75; news: (94.5 + 93.75) / 2 = 94.125
    assert charts.f1_gain_points(tagging, curves) == [
        charts.GainPoint("ner", None, 107.5, 0.0, 2),
        charts.GainPoint("ner", "news_final", 94.8, 0.375, 2),
    ]
