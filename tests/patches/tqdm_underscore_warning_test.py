"""`ldnet_allennlp.patches.tqdm_underscore_warning`: no warning about "_" metrics."""

import logging

from allennlp.training import util as training_util

import ldnet_allennlp  # noqa: F401  (applies the patches)


def test_underscore_metrics_stay_off_the_progress_bar_without_a_warning(caplog, monkeypatch):
    monkeypatch.setattr(training_util.HasBeenWarned, "tqdm_ignores_underscores", False)
    with caplog.at_level(logging.WARNING, logger="allennlp.training.util"):
        description = training_util.description_from_metrics(
            {"live_layers": 4.0, "_layer_mask/embedder/forward_0": 1.0}
        )
    assert description.startswith("live_layers: 4.0000") and "_layer_mask" not in description
    assert [r for r in caplog.records if r.name == "allennlp.training.util"] == []


def test_other_warnings_of_the_logger_still_show(caplog):
    with caplog.at_level(logging.WARNING, logger="allennlp.training.util"):
        logging.getLogger("allennlp.training.util").warning("something else")
    assert [r.getMessage() for r in caplog.records] == ["something else"]
