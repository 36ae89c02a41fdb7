"""
The `layer_selection` token embedder, on tiny LMs trained on the LM fixture (3 dense layers of 4
over 6-d words).
"""

import copy

import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.models.archival import load_archive

from ldnet_allennlp.lm.token_embedders import LayerSelectionTokenEmbedder
from ldnet_allennlp.lm.token_indexers import DenseLMTokenIndexer
from tests.lm.lm_archives import fixture_lm_archives, train_lm_archive

SENTENCES = [
    "The minister bought its shares in 1987 .".split(),
    "Oil prices rose .".split(),
    # characters and words the LM never saw
    ["Zürich", "日本", "🙂", "naïve", "Qxzy", "."],
]


@pytest.fixture(scope="module")
def archives():
    return fixture_lm_archives()


def build(archives, **kwargs):
    vocab = Vocabulary()
    embedder = LayerSelectionTokenEmbedder(
        archives["forward"], archives["backward"], vocab=vocab, projection_dim=5, **kwargs
    )
    return embedder, vocab


def batch(vocab, sentences=SENTENCES):
    indexer = DenseLMTokenIndexer()
    ids = [indexer.tokens_to_indices([Token(w) for w in s], vocab)["tokens"] for s in sentences]
    width = max(len(i) for i in ids)
    return torch.tensor([i + [0] * (width - len(i)) for i in ids])


def test_output_dims_and_masks(archives):
    embedder, vocab = build(archives)
    lm = load_archive(archives["forward"]).model
    assert embedder.num_layers == 3
    assert embedder.lm_output_dim == 2 * (6 + 3 * 4) == 2 * lm.get_output_dim()
    assert embedder.get_output_dim() == 5
    tokens = batch(vocab)
    output = embedder(tokens)
    assert output.shape == (3, 8, 5)
    assert torch.isfinite(output).all() and (output >= 0).all()  # ReLU
    mask = embedder.layer_mask
    assert mask.shape == (2, 3) and not mask.requires_grad
    assert ((mask >= 0) & (mask <= 1)).all() and (mask == 1).all()
    embedder.set_layer_mask_trainable(True)
    assert embedder.layer_mask.requires_grad
    trainable = {n for n, p in embedder.named_parameters() if p.requires_grad}
    assert trainable == {"bilm.layer_mask", "projection.weight", "projection.bias"}


def test_features_equal_the_lms_contextual_embeddings(archives):
    embedder, vocab = build(archives)
    tokens = batch(vocab)
    mask = tokens != 0
    expected = [
        load_archive(archives[d])
        .model.eval()
        .contextual_embeddings(tokens, mask, add_sentence_boundaries=True)
        for d in ("forward", "backward")
    ]
    features = embedder.lm_features(tokens)
    assert torch.allclose(features, torch.cat(expected, dim=-1), atol=1e-6)


def test_lms_stay_frozen_and_in_eval_mode_through_a_training_step(archives):
    embedder, vocab = build(archives, lm_dropout=0.3)
    before = {n: p.detach().clone() for n, p in embedder.named_parameters() if "_lm." in n}
    assert before
    embedder.train()
    assert embedder.training
    assert not embedder.forward_lm.training and not embedder.backward_lm.training
    assert not embedder.forward_lm.encoder.training
    optimizer = torch.optim.SGD([p for p in embedder.parameters() if p.requires_grad], lr=1.0)
    embedder(batch(vocab)).sum().backward()
    optimizer.step()
    for name, parameter in embedder.named_parameters():
        if "_lm." in name:
            assert not parameter.requires_grad and parameter.grad is None, name
            assert torch.equal(parameter, before[name]), name
    assert embedder.projection.weight.grad is not None
    assert embedder.layer_mask.grad is None


def test_trainable_mask_gets_gradients_but_lm_parameters_do_not(archives):
    embedder, vocab = build(archives, trainable_layer_mask=True)
    embedder(batch(vocab)).sum().backward()
    assert embedder.layer_mask.grad is not None and embedder.layer_mask.grad.abs().sum() > 0
    assert all(p.grad is None for n, p in embedder.named_parameters() if "_lm." in n)


@pytest.mark.parametrize("removed", [0, 1, 2])
def test_mask_zero_equals_the_lm_with_that_layer_removed(archives, removed):
    masked, vocab = build(archives)
    with torch.no_grad():
        masked.layer_mask[:, removed] = 0.0
    kept = [i for i in range(3) if i != removed]
    pruned, _ = build(archives, forward_kept_layers=kept, backward_kept_layers=kept)
    assert pruned.forward_lm.num_layers == pruned.backward_lm.num_layers == 2
    assert pruned.forward_lm.encoder.kept_layers == kept
    # the removed layer's mask entry is unused (0); the kept ones stay 1
    assert pruned.layer_mask[:, removed].eq(0).all() and pruned.layer_mask[:, kept].eq(1).all()
    assert pruned.lm_output_dim == 2 * (6 + 2 * 4)

    tokens = batch(vocab)
    full = masked.lm_features(tokens)
    half = full.size(-1) // 2
    columns = masked.forward_lm.encoder.input_columns(3, kept)
    selected = torch.cat([full[..., :half][..., columns], full[..., half:][..., columns]], -1)
    assert torch.allclose(selected, pruned.lm_features(tokens), atol=1e-6)
    # the removed layer's columns of the masked model are exactly zero
    dropped = [c for c in range(half) if c not in columns]
    assert full[..., dropped].abs().max() == 0


def test_kept_layers_out_of_range(archives):
    with pytest.raises(ConfigurationError, match="forward_kept_layers"):
        build(archives, forward_kept_layers=[0, 5])


def test_swapped_directions(archives):
    with pytest.raises(ConfigurationError, match="forward_lm_archive.*'backward'.*swapped"):
        LayerSelectionTokenEmbedder(archives["backward"], archives["forward"], vocab=Vocabulary())


def test_archive_that_is_not_a_dense_lm(archives, tmp_path):
    not_an_archive = tmp_path / "model.tar.gz"
    not_an_archive.write_text("not a tar file")
    with pytest.raises(ConfigurationError, match="backward_lm_archive"):
        LayerSelectionTokenEmbedder(archives["forward"], str(not_an_archive), vocab=Vocabulary())


def test_missing_archive_without_stored_copy(archives, tmp_path):
    with pytest.raises(ConfigurationError, match="forward_lm_archive .* does not exist"):
        LayerSelectionTokenEmbedder(str(tmp_path / "nope.tar.gz"), archives["backward"])


def test_lms_with_different_vocabularies(archives, tmp_path):
    # a backward LM trained on other text (the LM dev file) has another vocabulary
    other = train_lm_archive(
        tmp_path,
        "backward",
        {"train_data_path": "fixtures/lm/lm_fixture_dev.txt", "model.cutoffs": [4, 8]},
    )
    with pytest.raises(ConfigurationError, match="different vocabularies"):
        LayerSelectionTokenEmbedder(archives["forward"], other, vocab=Vocabulary())


def test_rebuilt_from_the_copy_stored_in_the_vocabulary(archives, tmp_path):
    embedder, vocab = build(archives, forward_kept_layers=[0, 2])
    tokens = batch(vocab)
    embedder.eval()
    expected = embedder(tokens)
    # as in load_archive of a tagger whose LM archives were deleted: same vocab, no LM files
    rebuilt = LayerSelectionTokenEmbedder(
        str(tmp_path / "gone_forward.tar.gz"),
        str(tmp_path / "gone_backward.tar.gz"),
        vocab=copy.deepcopy(vocab),
        projection_dim=5,
        forward_kept_layers=[0, 2],
    )
    rebuilt.load_state_dict(embedder.state_dict())
    rebuilt.eval()
    assert torch.allclose(rebuilt(tokens), expected)
