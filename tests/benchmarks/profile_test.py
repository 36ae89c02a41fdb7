"""benchmarks/studies/profile.py: each component's own time, by hand; the medians per word; the
committed results' headlines."""

from types import SimpleNamespace

import pytest

from allennlp.data import Token
from allennlp.models.archival import load_archive

from benchmarks.studies.profile import ComponentTimer
from tests.conftest import FIXTURES_ROOT


def test_each_component_gets_its_own_time_less_the_timed_calls_inside_it(monkeypatch):
    """A stand-in model whose methods advance a fake clock: the text-field embedder calls its
    token embedders, the `layer_selection` one calls its LM layers; two forwards are summed."""
    from benchmarks.studies import profile as study

    clock = {"now": 0.0}
    monkeypatch.setattr(study, "time", SimpleNamespace(perf_counter=lambda: clock["now"]))

    def work(seconds, *calls):
        def run(*args, **kwargs):
            clock["now"] += seconds
            for call in calls:
                call()

        return run

    bilm = SimpleNamespace(layers=work(4.5))
    lm = SimpleNamespace(bilm=bilm, forward=work(1.5, lambda: bilm.layers()))
    embedders = {
        "lm": lm,
        "token_characters": SimpleNamespace(forward=work(2.0)),
        "tokens": SimpleNamespace(forward=work(0.5)),
    }
    calls = [lambda e=e: e.forward() for e in embedders.values()]
    text = SimpleNamespace(_token_embedders=embedders, forward=work(1.5, *calls))
    model = SimpleNamespace(
        text_field_embedder=text,
        encoder=SimpleNamespace(forward=work(3.0)),
        tag_projection_layer=SimpleNamespace(forward=work(0.25)),
        crf=SimpleNamespace(viterbi_tags=work(1.0)),
    )
    timer = ComponentTimer(model)
    for _ in range(2):
        text.forward()
        model.encoder.forward()
        model.tag_projection_layer.forward()
        model.crf.viterbi_tags()
    rows = timer.components(total=30.0)
    assert rows == pytest.approx(
        {
            "lm_layers": 9.0,
            "lm_features_rest": 3.0,
            "token_characters": 4.0,
            "tokens": 1.0,
            "embedder_rest": 3.0,
            "word_bilstm": 6.0,
            "crf_emissions": 0.5,
            "viterbi": 2.0,
            "python_and_allennlp": 30.0 - 28.5,
            "total": 30.0,
        }
    )


def test_a_forward_pass_is_attributed_to_every_component():
    archive = load_archive(str(FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"))
    model = archive.model.eval()
    timer = ComponentTimer(model)
    tokens = ["John", "Smith", "visited", "Paris", "."]
    instance = archive.dataset_reader.text_to_instance([Token(t) for t in tokens])
    archive.dataset_reader.apply_token_indexers(instance)
    assert len(model.forward_on_instance(instance)["tags"]) == 5
    rows = ["lm_layers", "lm_features_rest", "embedder_rest", "word_bilstm", "crf_emissions"]
    for row in rows + ["viterbi"]:
        assert timer.seconds[row] > 0.0, row


def test_profile_takes_the_median_of_interleaved_rounds_per_word(monkeypatch, tmp_path):
    """Each configuration's seconds by component, as the timing protocol returns them, become
    µs per word; the speed-ups are the whole forwards' ratios."""
    import argparse

    from benchmarks.studies import profile as study

    test_file = tmp_path / "test.txt"
    test_file.write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n")
    seconds = {"unpruned": [3.0, 1.0, 2.0, 9.0, 2.0], "pruned": [1.0, 1.0, 0.5, 1.0, 4.0]}
    monkeypatch.setattr(study, "tensor_batches", lambda archive, s, size: (archive.name, [size]))
    monkeypatch.setattr(study, "ComponentTimer", lambda model: None)

    def case(model, batches, timer):
        rounds = iter([seconds[model][0]] + seconds[model])  # a warm-up, then 5 rounds
        return lambda: {"total": next(rounds), "viterbi": 0.5}

    monkeypatch.setattr(study, "profiled_case", case)
    monkeypatch.setattr(study, "CONLL03", {"CONLL03_TEST_DATA_PATH": str(test_file)})
    args = argparse.Namespace(batch1_sentences=1, rounds=5)
    args.unpruned, args.pruned = tmp_path / "unpruned", tmp_path / "pruned"
    result = study.profile(args)
    assert result["words_b32"] == 3 and result["words_b1"] == 2
    assert result["threads1_unpruned_b32_us_per_word"] == {"viterbi": 0.5e6 / 3, "total": 2e6 / 3}
    assert result["threads1_pruned_b1_us_per_word"]["total"] == 1e6 / 2
    assert result["threads1_speedup_b32"] == pytest.approx(2.0)


def test_the_summary_reads_the_committed_results():
    from benchmarks.harness.results import load_results
    from benchmarks.studies.profile import STUDY

    results = load_results(STUDY.results_file)
    headlines = {h.key: h.value for h in STUDY.summary(results)}
    figures = results["tasks"]["ner"]
    assert len(headlines) == 6
    for size in ("b32", "b1"):
        unpruned = figures[f"threads1_unpruned_{size}_us_per_word"]["total"]
        pruned = figures[f"threads1_pruned_{size}_us_per_word"]["total"]
        # the speed-up shown is the ratio of the two totals of the same run
        speedup = headlines[f"tasks.ner.threads1_speedup_{size}"]
        assert speedup == pytest.approx(unpruned / pruned) and speedup > 1
    for name in ("unpruned_b32", "pruned_b32"):
        parts = figures[f"threads1_{name}_us_per_word"]
        assert headlines[f"tasks.ner.threads1_{name}_us_per_word.total"] == parts["total"]
        lm_layers = headlines[f"tasks.ner.threads1_{name}_us_per_word.lm_layers"]
        assert lm_layers == parts["lm_layers"] and 0 < lm_layers < parts["total"]
