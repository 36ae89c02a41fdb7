"""
The GloVe text file builder (`write_glove_text_file`, `allennlp ldnet-glove`) on the fake package:
known vectors in, known text out, read back by AllenNLP's own `pretrained_file` loader.
"""

import gzip
import os
import sys

import pytest
import torch
from allennlp.commands import main as allennlp_main
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders.embedding import _read_pretrained_embeddings_file

from ldnet_allennlp.glove import text_file, write_glove_text_file
from tests.glove.conftest import fake_matrix

# the fake package's rows (tests/glove/conftest.py), written by hand
EXPECTED_LINES = [
    "the 0.418 0.24968 -0.41242 -0.00066023" + " 0" * 46,
    ", 0.013441 -0.25 0.125 1e-05" + " 0" * 46,
    ". 2.5 -0.25 0.125" + " 0" * 47,
    "in 3.5 -0.25 0.125" + " 0" * 47,
    "paris 4.5 -0.25 0.125" + " 0" * 47,
    "zanzibar 5.5 -0.25 0.125" + " 0" * 47,
    "ça 6.5 -0.25 0.125 0.1234567 -1.234567e+06" + " 0" * 45,  # 6 digits would lose these
    "3.5 7.5 -0.25 0.125" + " 0" * 47,
]
EXPECTED_TEXT = "\n".join(EXPECTED_LINES) + "\n"

# a cased vocabulary file as AllenNLP writes it (vocabulary/tokens.txt), plus a repeat, a blank
# line and a line with a space
VOCABULARY_LINES = ["@@UNKNOWN@@", "Paris", "the", "Paris", "", "Lyon", "ÇA", "two words"]
EXPECTED_VOCABULARY_TEXT = (
    "Paris 4.5 -0.25 0.125" + " 0" * 47 + "\n"
    "the 0.418 0.24968 -0.41242 -0.00066023" + " 0" * 46 + "\n"
    "ÇA 6.5 -0.25 0.125 0.1234567 -1.234567e+06" + " 0" * 45 + "\n"
)


def test_every_word_in_glove_order_as_exact_text(fake_glove, tmp_path):
    (tmp_path / "out").mkdir()
    output = tmp_path / "out" / "glove.txt"
    assert write_glove_text_file(str(output)) == (8, 0)
    assert output.read_text(encoding="utf-8") == EXPECTED_TEXT
    assert os.listdir(tmp_path / "out") == ["glove.txt"]  # the temporary file is gone


def test_gz_output_is_the_same_text_and_the_same_bytes_every_run(fake_glove, tmp_path):
    first, second = tmp_path / "first.txt.gz", tmp_path / "second.txt.gz"
    write_glove_text_file(str(first))
    write_glove_text_file(str(second))
    assert gzip.decompress(first.read_bytes()).decode("utf-8") == EXPECTED_TEXT
    assert first.read_bytes()[4:8] == b"\0\0\0\0"  # the header's timestamp is left at 0
    # the gzip header names the file: the same bytes apart from that name
    assert first.read_bytes().replace(b"first", b"second") == second.read_bytes()


def test_vocabulary_file_words_as_written_with_their_lowercased_vectors(fake_glove, tmp_path):
    vocabulary = tmp_path / "tokens.txt"
    vocabulary.write_text("\n".join(VOCABULARY_LINES) + "\n", encoding="utf-8")
    output = tmp_path / "glove.txt"
    written, missing = write_glove_text_file(str(output), vocabulary_file=str(vocabulary))
    assert (written, missing) == (3, 2)  # "@@UNKNOWN@@" and "Lyon" are not in GloVe
    assert output.read_text(encoding="utf-8") == EXPECTED_VOCABULARY_TEXT


@pytest.mark.parametrize("name", ["glove.txt", "glove.txt.gz"])
def test_allennlp_reads_the_file_as_pretrained_file(fake_glove, tmp_path, name):
    output = tmp_path / name
    write_glove_text_file(str(output))
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["paris", "the", "ça", ","], "tokens")
    weight = _read_pretrained_embeddings_file(str(output), 50, vocab, "tokens")
    matrix = torch.from_numpy(fake_matrix())
    for word, row in [("paris", 4), ("the", 0), ("ça", 6), (",", 1)]:
        assert torch.equal(weight[vocab.get_token_index(word, "tokens")], matrix[row])


def test_an_interrupted_write_leaves_no_file(fake_glove, tmp_path, monkeypatch):
    def interrupted(values):
        raise KeyboardInterrupt

    monkeypatch.setattr(text_file, "format_rows", interrupted)
    (tmp_path / "out").mkdir()
    with pytest.raises(KeyboardInterrupt):
        write_glove_text_file(str(tmp_path / "out" / "glove.txt.gz"))
    assert os.listdir(tmp_path / "out") == []


def test_command_line(fake_glove, tmp_path, monkeypatch, capsys):
    vocabulary = tmp_path / "tokens.txt"
    vocabulary.write_text("\n".join(VOCABULARY_LINES) + "\n", encoding="utf-8")
    output = tmp_path / "glove.txt.gz"
    # In-process, so that the fake package stays first on sys.path (the `allennlp` script puts
    # site-packages first; published_values_test.py runs the script on the real package.)
    arguments = ["ldnet-glove", "-o", str(output), "--vocabulary-file", str(vocabulary)]
    monkeypatch.setattr(sys, "argv", ["allennlp", *arguments])
    allennlp_main(prog="allennlp")
    printed = capsys.readouterr()
    assert f"wrote 3 50-d GloVe vectors to {output}" in printed.out
    assert f"2 words of {vocabulary} are not in GloVe 6B" in printed.out
    assert "GloVe vectors: 100%" in printed.err  # AllenNLP's Tqdm progress bar
    assert gzip.decompress(output.read_bytes()).decode("utf-8") == EXPECTED_VOCABULARY_TEXT
