"""`ldnet_allennlp.patches.vocabulary_resave_warning`: a resumed run re-saves its vocabulary
quietly."""

import logging

from allennlp.data import Vocabulary

import ldnet_allennlp  # noqa: F401  (applies the patches)


def _vocabulary_warnings(caplog, directory) -> list:
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["a", "b"], "tokens")
    with caplog.at_level(logging.WARNING, logger="allennlp.data.vocabulary"):
        caplog.clear()
        vocab.save_to_files(str(directory))
        vocab.save_to_files(str(directory))  # the second save finds the folder full
    return [r for r in caplog.records if "is not empty" in r.getMessage()]


def test_resaving_a_resumed_runs_vocabulary_is_quiet(tmp_path, caplog):
    # a serialization directory being resumed: config.json next to vocabulary/
    (tmp_path / "config.json").write_text("{}")
    assert _vocabulary_warnings(caplog, tmp_path / "vocabulary") == []


def test_other_non_empty_vocabulary_folders_still_warn(tmp_path, caplog):
    assert len(_vocabulary_warnings(caplog, tmp_path / "vocabulary")) == 1
    assert len(_vocabulary_warnings(caplog, tmp_path / "my_vocab")) == 1
