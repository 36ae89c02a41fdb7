"""benchmarks/profile_tagger.py: module times folded into the profile's rows, by hand."""

import pytest

from allennlp.data import Token
from allennlp.models.archival import load_archive

from benchmarks.profile_tagger import ComponentTimer
from tests.conftest import FIXTURES_ROOT


def test_module_times_fold_into_the_rows_by_hand():
    model = load_archive(str(FIXTURES_ROOT / "legacy_archives" / "ner_ldnet_pruned.tar.gz")).model
    timer = ComponentTimer(model)
    timer.seconds.update(
        {
            "text_field_embedder": 10.0,
            "embedder:lm": 6.0,
            "lm_layers:lm": 4.5,
            "embedder:token_characters": 2.0,
            "embedder:tokens": 0.5,
            "word_bilstm": 3.0,
            "crf_emissions": 0.25,
            "viterbi": 1.0,
        }
    )
    rows = timer.components(total=15.0)
    assert rows == pytest.approx(
        {
            "lm_layers": 4.5,
            "lm_features_rest": 1.5,
            "token_characters": 2.0,
            "tokens": 0.5,
            "embedder_rest": 10.0 - 8.5,
            "word_bilstm": 3.0,
            "crf_emissions": 0.25,
            "viterbi": 1.0,
            "python_and_allennlp": 15.0 - 14.25,
            "total": 15.0,
        }
    )


def test_a_forward_pass_is_attributed_to_every_component():
    archive = load_archive(str(FIXTURES_ROOT / "legacy_archives" / "ner_ldnet_pruned.tar.gz"))
    model = archive.model.eval()
    timer = ComponentTimer(model)
    tokens = ["John", "Smith", "visited", "Paris", "."]
    instance = archive.dataset_reader.text_to_instance([Token(t) for t in tokens])
    archive.dataset_reader.apply_token_indexers(instance)
    assert len(model.forward_on_instance(instance)["tags"]) == 5
    for key in ("embedder:lm", "lm_layers:lm", "word_bilstm", "crf_emissions", "viterbi"):
        assert timer.seconds[key] > 0.0, key
