"""benchmarks/export_benchmark.py's ratios and goals, by hand."""

import pytest

from benchmarks.export_benchmark import GOAL, ratios_and_goals

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


def test_without_the_unpruned_tagger_its_ratios_and_goals_are_left_out():
    ratios, met = ratios_and_goals(SPEED, {"runtime": 0.5, "runtime_tokens": 0.5})
    assert not [key for key in list(ratios) + list(met) if "unpruned" in key]
    assert ratios["runtime_vs_spacy_b32"] == pytest.approx(4.5)
