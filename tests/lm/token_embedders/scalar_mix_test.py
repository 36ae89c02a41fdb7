import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules import ScalarMix
from allennlp.modules.elmo import Elmo
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn.util import remove_sentence_boundaries

from ldnet_allennlp.lm.modules import DenseBiLm
from ldnet_allennlp.lm.token_embedders import DenseLMScalarMixEmbedder
from ldnet_allennlp.lm.token_embedders.scalar_mix import masked_mix_weights
from tests.conftest import FIXTURES_ROOT
from tests.lm.lm_archives import train_lm_archive

# The fixture LM: 3 dense layers of 4 over 6-d embeddings -> 4 layers to mix, each padded to 6
# per direction -> 12 features.
NUM_LAYERS, LAYER_DIM = 4, 12
SENTENCES = [
    "The minister bought its shares in 1987 .".split(),
    "Oil prices fell .".split(),
    "Officials said unknownword profits rose sharply in the quarter .".split(),
]


def embedder_from(lm_archives, vocab=None, **kwargs) -> DenseLMScalarMixEmbedder:
    params = {
        "type": "dense_lm_scalar_mix",
        "forward_lm_archive": lm_archives["FORWARD_LM_ARCHIVE"],
        "backward_lm_archive": lm_archives["BACKWARD_LM_ARCHIVE"],
        "dropout": 0.0,
    }
    params.update(kwargs)
    if vocab is None:
        return TokenEmbedder.from_params(Params(params))
    return TokenEmbedder.from_params(Params(params), vocab=vocab)


def token_ids(vocab) -> torch.LongTensor:
    """`(3, 11)` ids in the LMs' vocabulary (unknown words -> @@UNKNOWN@@), 0-padded."""
    ids = torch.zeros(len(SENTENCES), max(len(s) for s in SENTENCES), dtype=torch.long)
    for i, sentence in enumerate(SENTENCES):
        for j, word in enumerate(sentence):
            ids[i, j] = vocab.get_token_index(word, "tokens")
    return ids


def pad(tensor, dim):
    return torch.nn.functional.pad(tensor, (0, dim - tensor.size(-1)))


def expected_layers(embedder, ids):
    """The biLM layers computed independently, from each LM's own `contextual_layers`."""
    forward = embedder.bilm.forward_lm.contextual_layers(ids, add_sentence_boundaries=True)
    backward = embedder.bilm.backward_lm.contextual_layers(ids, add_sentence_boundaries=True)
    return [torch.cat([pad(f, 6), pad(b, 6)], dim=-1) for f, b in zip(forward, backward)]


def test_registered_and_shapes(lm_archives):
    embedder = embedder_from(lm_archives)
    assert isinstance(embedder, DenseLMScalarMixEmbedder)
    assert embedder.bilm.num_layers == NUM_LAYERS
    assert embedder.get_output_dim() == LAYER_DIM
    ids = token_ids(embedder.bilm.vocab)
    output = embedder(ids)
    assert output.shape == (3, ids.size(1), LAYER_DIM)
    # padding never leaks into the result
    assert output[1, 4:].abs().sum() == 0
    # extra leading dims (e.g. a ListField of TextFields) are flattened and restored
    assert torch.allclose(embedder(ids.unsqueeze(0)).squeeze(0), output)


@pytest.mark.parametrize("do_layer_norm", [False, True])
def test_equals_allennlp_scalar_mix_on_the_same_layers(lm_archives, do_layer_norm):
    initial = [0.3, -1.0, 0.5, 2.0]
    embedder = embedder_from(
        lm_archives, do_layer_norm=do_layer_norm, initial_scalar_parameters=initial
    ).eval()
    with torch.no_grad():
        embedder.scalar_mixes[0].gamma.fill_(1.7)
    ids = token_ids(embedder.bilm.vocab)

    bilm_output = embedder.bilm(ids)
    reference_mix = ScalarMix(
        NUM_LAYERS, do_layer_norm=do_layer_norm, initial_scalar_parameters=initial
    )
    with torch.no_grad():
        reference_mix.gamma.fill_(1.7)
    mixed = reference_mix(bilm_output["activations"], bilm_output["mask"])
    expected, _ = remove_sentence_boundaries(mixed, bilm_output["mask"])
    assert torch.allclose(embedder(ids), expected, atol=1e-6)

    # ... and those layers are the LMs' own layers, forward and backward halves side by side
    layers = expected_layers(embedder, ids)
    unwrapped = [
        remove_sentence_boundaries(a, bilm_output["mask"])[0] for a in bilm_output["activations"]
    ]
    for mine, theirs in zip(unwrapped, layers):
        assert torch.allclose(mine, theirs, atol=1e-6)
    if not do_layer_norm:
        weights = torch.softmax(torch.tensor(initial), dim=0)
        by_hand = 1.7 * sum(w * layer for w, layer in zip(weights, layers))
        assert torch.allclose(embedder(ids), by_hand, atol=1e-5)


def test_fixed_uniform_weights_give_the_mean_of_the_layers(lm_archives):
    embedder = embedder_from(lm_archives, scalar_mix_parameters=[0.0] * NUM_LAYERS)
    ids = token_ids(embedder.bilm.vocab)
    mean = torch.stack(expected_layers(embedder, ids)).mean(dim=0)
    assert torch.allclose(embedder(ids), mean, atol=1e-6)
    # fixed: nothing of the embedder is trainable
    assert not any(p.requires_grad for p in embedder.parameters())


def test_gradients_reach_only_the_mix_and_the_projection(lm_archives):
    embedder = embedder_from(lm_archives, projection_dim=5, num_output_representations=2)
    embedder.train()
    assert not embedder.bilm.forward_lm.training and not embedder.bilm.backward_lm.training
    ids = token_ids(embedder.bilm.vocab)
    output = embedder(ids)
    assert output.shape == (3, ids.size(1), 5)
    second = embedder.last_representations[1]
    assert second.shape == (3, ids.size(1), LAYER_DIM)
    assert torch.equal(embedder.last_mask, ids != 0)
    (output.sum() + second.sum()).backward()
    trainable = {name for name, p in embedder.named_parameters() if p.requires_grad}
    assert trainable == {
        f"_elmo.scalar_mix_{k}.{name}"
        for k in range(2)
        for name in ["gamma"] + [f"scalar_parameters.{j}" for j in range(NUM_LAYERS)]
    } | {"_projection.weight", "_projection.bias"}
    for name, parameter in embedder.named_parameters():
        if name in trainable:
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        else:
            assert name.startswith("_elmo._elmo_lstm.") and parameter.grad is None, name


def test_allennlp_elmo_runs_with_our_bilm_as_module(lm_archives):
    bilm = DenseBiLm(lm_archives["FORWARD_LM_ARCHIVE"], lm_archives["BACKWARD_LM_ARCHIVE"])
    elmo = Elmo(None, None, num_output_representations=2, dropout=0.0, module=bilm)
    assert elmo.get_output_dim() == LAYER_DIM
    ids = token_ids(bilm.vocab)
    output = elmo(ids)
    assert len(output["elmo_representations"]) == 2
    assert torch.equal(output["mask"], ids != 0)
    # untrained mixes are uniform: the same as our embedder with fixed uniform weights
    embedder = embedder_from(lm_archives, scalar_mix_parameters=[0.0] * NUM_LAYERS)
    for representation in output["elmo_representations"]:
        assert torch.allclose(representation, embedder(ids), atol=1e-6)
    # the activations follow Elmo's contract: boundaries included
    activations = bilm(ids)["activations"]
    assert len(activations) == bilm.num_layers
    assert all(a.shape == (3, ids.size(1) + 2, LAYER_DIM) for a in activations)


def test_l2_regularizer_on_scalar_parameters_pulls_toward_uniform(lm_archives):
    from allennlp.nn.regularizers import RegularizerApplicator

    embedder = embedder_from(lm_archives, initial_scalar_parameters=[1.0, 0.0, 0.0, -1.0])
    regularizer = RegularizerApplicator.from_params(
        Params({"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]})
    )
    penalty = regularizer(embedder)
    assert torch.isclose(penalty, torch.tensor(0.1 * 2.0))
    penalty.backward()
    assert embedder.scalar_mixes[0].scalar_parameters[0].grad.item() == pytest.approx(0.2)


def test_archive_state_survives_save_and_load(lm_archives, tmp_path):
    embedder = embedder_from(lm_archives, initial_scalar_parameters=[1.0, 2.0, 3.0, 4.0])
    torch.save(embedder.state_dict(), tmp_path / "weights.th")
    again = embedder_from(lm_archives)
    again.load_state_dict(torch.load(tmp_path / "weights.th"))
    ids = token_ids(embedder.bilm.vocab)
    assert torch.allclose(again(ids), embedder(ids))


# ------------------------------------------------------------------------------ bad input


@pytest.fixture(scope="module")
def other_lm_archives(tmp_path_factory):
    directory = tmp_path_factory.mktemp("other_lms")
    other_vocab = {
        "train_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt"),
        "model.cutoffs": [5, 10],
    }
    return {
        "two_layers": train_lm_archive(
            directory / "two", "backward", {"model.encoder.num_layers": 2}
        ),
        "other_vocab": train_lm_archive(directory / "vocab", "backward", other_vocab),
        "other_vocab_forward": train_lm_archive(directory / "vocab", "forward", other_vocab),
    }


def test_swapped_directions_name_the_key(lm_archives):
    with pytest.raises(
        ConfigurationError, match=r"forward_lm_archive \(.*\) holds a 'backward' language model"
    ):
        embedder_from(
            lm_archives,
            forward_lm_archive=lm_archives["BACKWARD_LM_ARCHIVE"],
            backward_lm_archive=lm_archives["FORWARD_LM_ARCHIVE"],
        )


def test_mismatched_archives_name_the_key(lm_archives, other_lm_archives):
    with pytest.raises(ConfigurationError, match="backward_lm_archive has 2 layers"):
        embedder_from(lm_archives, backward_lm_archive=other_lm_archives["two_layers"])
    with pytest.raises(ConfigurationError, match="have different vocabularies"):
        embedder_from(lm_archives, backward_lm_archive=other_lm_archives["other_vocab"])


def test_missing_archive_names_the_key(lm_archives, tmp_path):
    with pytest.raises(ConfigurationError, match=r"forward_lm_archive \(.*\) does not exist"):
        embedder_from(lm_archives, forward_lm_archive=str(tmp_path / "nope.tar.gz"))


def test_not_a_dense_lm_names_the_key(lm_archives):
    student = str(FIXTURES_ROOT / "archives" / "student_sst2.tar.gz")
    with pytest.raises(
        ConfigurationError,
        match=r"backward_lm_archive \(.*\) holds a .*, not a dense_language_model",
    ):
        embedder_from(lm_archives, backward_lm_archive=student)


@pytest.mark.parametrize("value", [0, -1])
def test_num_output_representations_below_one(lm_archives, value):
    with pytest.raises(ConfigurationError, match="num_output_representations must be >= 1"):
        embedder_from(lm_archives, num_output_representations=value)


@pytest.mark.parametrize("key", ["scalar_mix_parameters", "initial_scalar_parameters"])
def test_scalar_parameters_of_wrong_length(lm_archives, key):
    with pytest.raises(ConfigurationError, match=f"{key} has 3 values but the biLM has 4 layers"):
        embedder_from(lm_archives, **{key: [0.0, 0.0, 0.0]})


def test_fixed_and_initial_parameters_together(lm_archives):
    with pytest.raises(ConfigurationError, match="not both"):
        embedder_from(
            lm_archives,
            scalar_mix_parameters=[0.0] * NUM_LAYERS,
            initial_scalar_parameters=[0.0] * NUM_LAYERS,
        )


def test_task_vocabulary_never_resizes_the_lm_embeddings(lm_archives):
    from allennlp.data import Vocabulary

    embedder = embedder_from(lm_archives)
    task_vocab = Vocabulary({"tokens": {f"word{i}": 1 for i in range(500)}})
    sizes = [p.shape for p in embedder.bilm.parameters()]
    for module in embedder.modules():  # what Model.extend_embedder_vocab does on archive load
        if hasattr(module, "extend_vocab"):
            module.extend_vocab(task_vocab)
    assert [p.shape for p in embedder.bilm.parameters()] == sizes


def test_works_with_the_dense_lm_tokens_indexer(lm_archives, other_lm_archives):
    from allennlp.data import Token, Vocabulary
    from allennlp.data.token_indexers import TokenIndexer

    vocab = Vocabulary()
    embedder = embedder_from(lm_archives, vocab=vocab)
    indexer = TokenIndexer.from_params(Params({"type": "dense_lm_tokens"}))
    indexed = indexer.tokens_to_indices([Token(w) for w in SENTENCES[2]], vocab)["tokens"]
    assert indexed == token_ids(embedder.bilm.vocab)[2].tolist()
    # the namespace now holds the LMs' words: the same LMs again are fine, others are not
    embedder_from(lm_archives, vocab=vocab)
    with pytest.raises(ConfigurationError, match="namespace 'lm_tokens'"):
        embedder_from(
            lm_archives,
            vocab=vocab,
            forward_lm_archive=other_lm_archives["other_vocab_forward"],
            backward_lm_archive=other_lm_archives["other_vocab"],
        )


# ------------------------------------------------------------------------------ layer masks


def without_boundaries(embedder, ids):
    """The biLM's masked layers per direction, sentence boundaries removed (each 0-padded)."""
    layers, mask = embedder.bilm.layers(ids)
    return {
        direction: [remove_sentence_boundaries(layer, mask)[0] for layer in layers[direction]]
        for direction in ("forward", "backward")
    }


def test_masked_weights_by_hand():
    s = torch.tensor([0.3, -1.0, 0.5, 2.0])
    masks = torch.tensor([[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.5, 1.0]])
    e = [1.3498588, 0.3678794, 1.6487213, 7.3890561]  # exp(s)
    forward = [e[0], e[1], 0.0, e[3]]  # layer 2 removed: the rest share its weight
    backward = [e[0], 0.0, 0.5 * e[2], e[3]]  # layer 1 removed, layer 2 at half weight
    expected = torch.tensor(
        [[w / sum(forward) for w in forward], [w / sum(backward) for w in backward]]
    )
    weights = masked_mix_weights(s, masks)
    assert torch.allclose(weights, expected, atol=1e-6)
    assert torch.allclose(weights.sum(dim=1), torch.ones(2))
    # every mask 1: the plain softmax, in both directions
    assert torch.allclose(masked_mix_weights(s, torch.ones(2, 4)), torch.softmax(s, 0).expand(2, 4))


@pytest.mark.parametrize("do_layer_norm", [False, True])
def test_a_removed_layer_s_weight_is_renormalised_over_the_rest(lm_archives, do_layer_norm):
    initial = [0.3, -1.0, 0.5, 2.0]
    embedder = embedder_from(
        lm_archives, initial_scalar_parameters=initial, do_layer_norm=do_layer_norm
    ).eval()
    with torch.no_grad():
        embedder.scalar_mixes[0].gamma.fill_(1.7)
        # forward: LM layer 1 removed; backward: LM layer 0 removed
        embedder.layer_mask.copy_(torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]))
    ids = token_ids(embedder.bilm.vocab)
    layers = without_boundaries(embedder, ids)
    e = torch.tensor(initial).exp()
    forward = [e[0], e[1], 0.0, e[3]]  # the mix's layer j is the LM's layer j - 1
    backward = [e[0], 0.0, e[2], e[3]]
    if do_layer_norm:
        # each layer layer-normalised as a whole (ScalarMix's norm), then weighted per direction
        bilm_output = embedder.bilm(ids)
        mask = bilm_output["mask"]
        by_hand = [
            sum(
                w / sum(weights) * _normed_half(activation, mask, row)
                for w, activation in zip(weights, bilm_output["activations"])
            )
            for row, weights in enumerate((forward, backward))
        ]
        expected, _ = remove_sentence_boundaries(1.7 * torch.cat(by_hand, dim=-1), mask)
    else:
        by_hand = [
            sum(w / sum(weights) * pad(layer, 6) for w, layer in zip(weights, layers[direction]))
            for weights, direction in ((forward, "forward"), (backward, "backward"))
        ]
        expected = 1.7 * torch.cat(by_hand, dim=-1)
    assert torch.allclose(embedder(ids), expected, atol=1e-5)


def _normed_half(activation, mask, row):
    """`ScalarMix`'s layer norm of a whole layer, then one direction's half of it."""
    broadcast = mask.unsqueeze(-1)
    count = mask.sum() * activation.size(-1)
    mean = (activation * broadcast).sum() / count
    variance = (((activation * broadcast - mean) * broadcast) ** 2).sum() / count
    normed = (activation - mean) / torch.sqrt(variance + 1e-13)
    return normed[..., 6 * row : 6 * row + 6]


def test_a_soft_mask_scales_its_weight_before_the_renormalisation(lm_archives):
    embedder = embedder_from(lm_archives, initial_scalar_parameters=[0.0, 1.0, 0.0, 0.0]).eval()
    with torch.no_grad():
        embedder.layer_mask.copy_(torch.tensor([[1.0, 0.5, 1.0], [1.0, 1.0, 0.25]]))
    ids = token_ids(embedder.bilm.vocab)
    layers = without_boundaries(embedder, ids)  # layer j is already z_j · h_j
    e = torch.tensor([1.0, 2.7182818, 1.0, 1.0])
    forward = [e[0], e[1], 0.5 * e[2], e[3]]
    backward = [e[0], e[1], e[2], 0.25 * e[3]]
    by_hand = [
        sum(w / sum(weights) * pad(layer, 6) for w, layer in zip(weights, layers[direction]))
        for weights, direction in ((forward, "forward"), (backward, "backward"))
    ]
    assert torch.allclose(embedder(ids), torch.cat(by_hand, dim=-1), atol=1e-5)


def test_trainable_masks_get_finite_gradients_also_at_zero(lm_archives):
    embedder = embedder_from(lm_archives, trainable_layer_mask=True)
    assert embedder.layer_mask.requires_grad
    with torch.no_grad():
        embedder.layer_mask.copy_(torch.tensor([[1.0, 0.0, 0.7], [0.0, 1.0, 1.0]]))
    embedder(token_ids(embedder.bilm.vocab)).sum().backward()
    gradient = embedder.layer_mask.grad
    assert torch.isfinite(gradient).all() and gradient.abs().sum() > 0


def test_kept_layers_keep_the_mix_s_shape_and_keys(lm_archives):
    full = embedder_from(lm_archives)
    pruned = embedder_from(lm_archives, forward_kept_layers=[0, 2], backward_kept_layers=[1])
    assert pruned.kept_layers() == {"forward": [0, 2], "backward": [1]}
    assert pruned.forward_lm.num_layers == 2 and pruned.backward_lm.num_layers == 1
    assert pruned.bilm.num_layers == NUM_LAYERS and pruned.get_output_dim() == LAYER_DIM
    assert pruned.layer_mask.tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert torch.equal(
        pruned.bilm.mix_masks(), torch.tensor([[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]])
    )
    mix_keys = {k for k in full.state_dict() if "scalar_mix" in k}
    assert mix_keys == {k for k in pruned.state_dict() if "scalar_mix" in k}
    ids = token_ids(pruned.bilm.vocab)
    assert pruned(ids).shape == full(ids).shape
    # the activations follow the loaded LMs' layers: a removed layer's half is zeros
    activations = pruned.bilm(ids)["activations"]
    assert len(activations) == NUM_LAYERS
    assert activations[2][..., :6].abs().sum() == 0 and activations[1][..., 6:].abs().sum() == 0
    assert activations[3][..., 6:].abs().sum() == 0 and activations[3][..., :6].abs().sum() > 0
    assert full.mix_multiply_adds() == 2 * 4 * 6 and pruned.mix_multiply_adds() == (3 + 2) * 6


def test_unmasked_mix_is_allennlp_s_scalar_mix_exactly(lm_archives):
    embedder = embedder_from(lm_archives, initial_scalar_parameters=[0.3, -1.0, 0.5, 2.0]).eval()
    ids = token_ids(embedder.bilm.vocab)
    bilm_output = embedder.bilm(ids)
    mix = embedder.scalar_mixes[0]
    assert torch.equal(
        mix(bilm_output["activations"], bilm_output["mask"]),
        ScalarMix.forward(mix, bilm_output["activations"], bilm_output["mask"]),
    )
