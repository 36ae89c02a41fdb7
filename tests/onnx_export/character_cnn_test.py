"""
`_CharacterCnn`, the exported character CNN, against AllenNLP's `TokenCharactersEncoder` with a
`CnnEncoder` (what it rewrites with fewer graph nodes: windows that reach into the padding found
from their last character, the embedded padding not zeroed): the same
vectors in eager mode, bit for bit, and within float error on onnxruntime, for words of every
length from none to the longest (shorter than the window too), one or several window sizes,
with and without a projection; and given words `(num_words, num_chars)` rather than sentences,
the vectors of the same words, with no reshape in the graph.
"""

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

from allennlp.modules.seq2vec_encoders import CnnEncoder
from allennlp.modules.token_embedders import Embedding, TokenCharactersEncoder

from ldnet_allennlp.onnx_export.emissions import _CharacterCnn

NUM_CHARS = 9


def encoder_and_ids(ngram_filter_sizes, output_dim):
    """A random AllenNLP character encoder (its padding row not zero) and character ids
    `(3, 5, NUM_CHARS)` of words with 0 to NUM_CHARS characters."""
    torch.manual_seed(0)
    cnn = CnnEncoder(6, 4, ngram_filter_sizes=ngram_filter_sizes, output_dim=output_dim)
    encoder = TokenCharactersEncoder(Embedding(embedding_dim=6, num_embeddings=20), cnn).eval()
    lengths = torch.randint(0, NUM_CHARS + 1, (3, 5))
    lengths[0, :3] = torch.tensor([0, 1, NUM_CHARS])
    ids = torch.randint(1, 20, (3, 5, NUM_CHARS)) * (torch.arange(NUM_CHARS) < lengths[..., None])
    return encoder, ids


@pytest.mark.parametrize("ngram_filter_sizes, output_dim", [((3,), None), ((2, 3, 5), 7)])
def test_the_same_vectors_as_allennlps_encoder(ngram_filter_sizes, output_dim, tmp_path):
    encoder, ids = encoder_and_ids(ngram_filter_sizes, output_dim)
    assert encoder._embedding._module.weight[0].abs().sum() > 0
    module = _CharacterCnn(encoder, "token_characters")
    with torch.no_grad():
        expected = encoder(ids)
        assert torch.equal(module(ids), expected)
        path = tmp_path / "characters.onnx"
        axes = {0: "batch", 1: "num_tokens", 2: "num_chars"}
        torch.onnx.export(
            module,
            (ids,),
            str(path),
            dynamo=False,
            input_names=["characters"],
            output_names=["vectors"],
            dynamic_axes={"characters": axes},
            opset_version=17,
        )
    onnx.checker.check_model(str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (ids, ids[1:, :2, :6]):  # other batch sizes and word lengths than traced
        with torch.no_grad():
            want = encoder(batch).numpy()
        got = session.run(None, {"characters": batch.numpy()})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ngram_filter_sizes, output_dim", [((3,), None), ((2, 3, 5), 7)])
def test_words_give_the_vectors_of_the_same_words_in_sentences(
    ngram_filter_sizes, output_dim, tmp_path
):
    """The graph of words (what `word_network_*.onnx` is): `(num_words, num_chars)` ->
    `(num_words, dim)`, AllenNLP's vectors of the same words laid out in sentences, in eager
    mode bit for bit and on onnxruntime within float error, at other counts than traced."""
    encoder, ids = encoder_and_ids(ngram_filter_sizes, output_dim)
    module = _CharacterCnn(encoder, "token_characters")
    words = ids.reshape(-1, NUM_CHARS)
    with torch.no_grad():
        expected = encoder(ids).reshape(words.size(0), -1)
        assert torch.equal(module(words), expected)
        path = tmp_path / "words.onnx"
        torch.onnx.export(
            module,
            (words[:2],),
            str(path),
            dynamo=False,
            input_names=["characters"],
            output_names=["vectors"],
            dynamic_axes={"characters": {0: "num_words", 1: "num_chars"}},
            opset_version=17,
        )
    graph = onnx.load(str(path))
    assert "Reshape" not in {node.op_type for node in graph.graph.node}
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"characters": words.numpy()})[0]
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)
