"""
`allennlp ldnet-export-word-vectors`: the LM's input embeddings as GloVe-format text, read back
through AllenNLP's own `pretrained_file` loader.
"""

from pathlib import Path

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders.embedding import _read_pretrained_embeddings_file

from ldnet_allennlp.lm import write_word_vector_file
from ldnet_allennlp.lm.modules.lm_archives import DenseLanguageModelFromArchive
from tests.cli import run_allennlp
from tests.lm.lm_archives import train_lm_archive


@pytest.fixture(scope="module")
def lm_archive(tmp_path_factory) -> str:
    return train_lm_archive(tmp_path_factory.mktemp("lm"), "forward")


def read_vectors(path: Path):
    rows = [line.rstrip("\n").split(" ") for line in path.read_text(encoding="utf-8").splitlines()]
    return {row[0]: torch.tensor([float(value) for value in row[1:]]) for row in rows}


def test_every_word_round_trips_through_allennlp_pretrained_file(lm_archive, tmp_path):
    output = tmp_path / "vectors.txt"
    count, dim = write_word_vector_file(lm_archive, str(output))
    lm = DenseLanguageModelFromArchive.from_lm_archive(lm_archive)
    words = lm.vocab.get_index_to_token_vocabulary("tokens")
    expected_words = [w for i, w in words.items() if i >= 2]  # padding and OOV left out
    assert count == len(expected_words) and dim == lm.embedding_dim
    # AllenNLP's own reader, into a vocabulary that has the same words
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(expected_words, "tokens")
    weight = _read_pretrained_embeddings_file(str(output), dim, vocab, "tokens")
    with torch.no_grad():
        for word in expected_words:
            lm_id = lm.vocab.get_token_index(word, "tokens")
            lm_vector = lm.embed_tokens(torch.tensor([[lm_id]]))[0, 0]
            loaded = weight[vocab.get_token_index(word, "tokens")]
            torch.testing.assert_close(loaded, lm_vector, rtol=1e-5, atol=1e-6)


def test_lowercase_keeps_the_most_frequent_cased_variant(lm_archive, tmp_path):
    output = tmp_path / "lower.txt"
    write_word_vector_file(lm_archive, str(output), lowercase=True)
    vectors = read_vectors(output)
    lm = DenseLanguageModelFromArchive.from_lm_archive(lm_archive)
    index_to_word = lm.vocab.get_index_to_token_vocabulary("tokens")
    first_variant = {}
    for index in sorted(index_to_word)[2:]:
        first_variant.setdefault(index_to_word[index].lower(), index)
    assert sorted(vectors) == sorted(first_variant)
    # the fixture text has "The" 22 times and "the" 10 times: the more frequent variant wins
    assert index_to_word[first_variant["the"]] == "The"
    with torch.no_grad():
        expected = lm.embed_tokens(torch.tensor([[first_variant["the"]]]))[0, 0]
    torch.testing.assert_close(vectors["the"], expected, rtol=1e-5, atol=1e-6)


def test_a_non_lm_archive_is_refused_with_its_name(tmp_path):
    not_an_archive = tmp_path / "model.tar.gz"
    not_an_archive.write_text("not a tar file")
    with pytest.raises(ConfigurationError, match="model.tar.gz"):
        write_word_vector_file(str(not_an_archive), str(tmp_path / "out.txt"))


def test_command_line(lm_archive, tmp_path):
    output = tmp_path / "cli.txt"
    process = run_allennlp(
        ["ldnet-export-word-vectors", lm_archive, str(output), "--lowercase"]
        + ["--include-package", "ldnet_allennlp"]
    )
    assert "word vectors" in process.stdout
    assert output.read_text(encoding="utf-8").split(" ", 1)[0].islower()
