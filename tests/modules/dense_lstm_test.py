import copy

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from ldnet_allennlp.modules import DenseLSTMStack, reverse_padded_sequence, run_backward

INPUT, HIDDEN, LAYERS = 5, 3, 4


def make_batch(seed=0):
    torch.manual_seed(seed)
    inputs = torch.randn(3, 6, INPUT)
    mask = torch.tensor(
        [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], dtype=torch.bool
    )
    return inputs, mask


def make_stack(**kwargs):
    torch.manual_seed(1)
    return DenseLSTMStack(INPUT, HIDDEN, LAYERS, **kwargs).eval()


def test_output_dims_and_pieces():
    stack = make_stack()
    inputs, mask = make_batch()
    output = stack(inputs, mask)
    assert stack.get_output_dim() == INPUT + LAYERS * HIDDEN
    assert output.shape == (3, 6, INPUT + LAYERS * HIDDEN)
    pieces = stack.forward_layers(inputs, mask)
    assert [p.shape[-1] for p in pieces] == [INPUT] + [HIDDEN] * LAYERS
    assert torch.equal(torch.cat(pieces, -1), output)
    # The first block of the output is the input itself; padding is zero.
    assert torch.allclose(output[0, :, :INPUT], inputs[0])
    assert output[1, 3:].abs().sum() == 0


def test_layer_l_is_input_of_later_layers_only():
    # Layer 0 reads only x: its output for a prefix does not depend on later layers.
    stack = make_stack()
    inputs, mask = make_batch()
    full = stack(inputs, mask)
    single = torch.nn.LSTM(INPUT, HIDDEN, batch_first=True)
    single.load_state_dict(stack.layers[0].state_dict())
    expected, _ = single(inputs[:1])
    assert torch.allclose(full[0, :, INPUT : INPUT + HIDDEN], expected, atol=1e-6)


@pytest.mark.parametrize("removed", [0, 1, 3])
def test_zero_mask_equals_pruned_stack(removed):
    stack = make_stack()
    inputs, mask = make_batch()
    layer_mask = torch.ones(LAYERS)
    layer_mask[removed] = 0.0
    masked = stack.forward_layers(inputs, mask, layer_mask)
    keep = [i for i in range(LAYERS) if i != removed]
    smaller = stack.pruned(keep)
    assert smaller.kept_layers == keep
    assert smaller.num_layers == LAYERS - 1
    assert smaller.get_output_dim() == INPUT + (LAYERS - 1) * HIDDEN
    pruned = smaller.forward_layers(inputs, mask)
    assert masked[1 + removed].abs().sum() == 0
    expected = [masked[0]] + [masked[1 + i] for i in keep]
    for got, want in zip(pruned, expected):
        assert torch.allclose(got, want, atol=1e-6)
    # Pruning twice records indices of the original stack.
    assert smaller.pruned([1, 2]).kept_layers == keep[1:]


def test_the_mask_is_an_argument_with_gradient_and_none_masks_nothing():
    stack = make_stack()
    inputs, mask = make_batch()
    assert "layer_mask" not in stack.state_dict()  # the mask's one home is the biLM's parameter
    assert torch.equal(stack(inputs, mask), stack(inputs, mask, torch.ones(4)))
    external = torch.tensor([1.0, 1.0, 0.0, 1.0], requires_grad=True)
    via_argument = stack(inputs, mask, external)
    pieces = stack.forward_layers(inputs, mask, external)
    assert pieces[3].abs().sum() == 0
    via_argument.sum().backward()
    assert external.grad is not None and external.grad.abs().sum() > 0


def test_a_legacy_mask_buffer_of_ones_loads_and_any_other_is_refused():
    stack = make_stack()
    legacy = dict(stack.state_dict(), layer_mask=torch.ones(4))
    make_stack().load_state_dict(legacy)  # strict: the old key is dropped, not unexpected
    legacy["layer_mask"] = torch.tensor([1.0, 0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="always ones"):
        make_stack().load_state_dict(legacy)


def test_layer_dropout_semantics():
    stack = make_stack(layer_dropout=0.5)
    stack.train()
    inputs, mask = make_batch()
    # Force the decision: drop layer 1 only.
    stack._layer_keep = lambda: [True, False, True, True]
    dropped = stack.forward_layers(inputs, mask)
    del stack._layer_keep
    stack.eval()
    clean = stack.forward_layers(inputs, mask)
    # Head path untouched: layers 0 and 1 are unchanged, and layer 1 is NOT zero on the output.
    assert torch.allclose(dropped[1], clean[1])
    assert torch.allclose(dropped[2], clean[2])
    assert dropped[2].abs().sum() > 0
    # Later layers see zeros instead of layer 1: same as masking layer 1 only on their inputs.
    layer_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
    masked = stack.forward_layers(inputs, mask, layer_mask)
    assert torch.allclose(dropped[3], masked[3], atol=1e-6)
    assert torch.allclose(dropped[4], masked[4], atol=1e-6)
    assert not torch.allclose(dropped[3], clean[3])


def test_layer_dropout_decided_once_per_batch_and_only_in_training():
    stack = make_stack(layer_dropout=0.5)
    inputs, mask = make_batch()
    stack.eval()
    assert stack._layer_keep() == [True] * LAYERS
    stack.train()
    torch.manual_seed(3)
    decisions = {tuple(stack._layer_keep()) for _ in range(200)}
    assert len(decisions) > 4  # random per batch, one bool per layer
    # Decided once per batch: every sequence of the batch sees the same decision, so a batch
    # equals its rows run separately with the same decision.
    stack._layer_keep = lambda: [False, True, False, True]
    torch.manual_seed(0)
    batch = stack(inputs, mask)
    row = stack(inputs[1:2, :3], mask[1:2, :3])
    assert torch.allclose(batch[1, :3], row[0], atol=1e-6)


def test_padding_invariance():
    stack = make_stack()
    inputs, mask = make_batch()
    batch = stack(inputs, mask)
    for b in range(3):
        n = int(mask[b].sum())
        alone = stack(inputs[b : b + 1, :n], mask[b : b + 1, :n])
        assert torch.allclose(batch[b, :n], alone[0], atol=1e-6)
    # Garbage in padded positions changes nothing.
    noisy = inputs.clone()
    noisy[~mask] = 100.0
    assert torch.allclose(stack(noisy, mask), batch, atol=1e-6)


def test_empty_sequence_gives_zeros():
    stack = make_stack()
    inputs, mask = make_batch()
    mask[1] = False
    output = stack(inputs, mask)
    assert output[1].abs().sum() == 0


def test_reverse_padded_sequence():
    inputs = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    mask = inputs != 0
    assert reverse_padded_sequence(inputs, mask).tolist() == [[3, 2, 1, 0], [5, 4, 0, 0]]
    vectors = torch.randn(2, 4, 3)
    assert torch.equal(
        reverse_padded_sequence(reverse_padded_sequence(vectors, mask), mask), vectors
    )


def test_backward_equals_forward_on_reversed_sequence():
    stack = make_stack()
    inputs, mask = make_batch()
    backward = run_backward(stack, inputs, mask)
    for b in range(3):
        n = int(mask[b].sum())
        reversed_row = inputs[b : b + 1, :n].flip(1)
        forward = stack(reversed_row, mask[b : b + 1, :n]).flip(1)
        assert torch.allclose(backward[b, :n], forward[0], atol=1e-6)
    layers = run_backward(stack, inputs, mask, return_all_layers=True)
    assert torch.allclose(torch.cat(layers, -1), backward)


def test_bad_config():
    with pytest.raises(ConfigurationError, match="num_layers"):
        DenseLSTMStack(4, 3, 0)
    with pytest.raises(ConfigurationError, match="layer_dropout"):
        DenseLSTMStack(4, 3, 2, layer_dropout=1.0)
    with pytest.raises(ConfigurationError, match="dropout"):
        DenseLSTMStack(4, 3, 2, dropout=-0.1)


def test_seq2seq_encoder():
    inputs, mask = make_batch()
    encoder = Seq2SeqEncoder.from_params(
        Params(
            {
                "type": "dense_lstm",
                "input_size": INPUT,
                "hidden_size": HIDDEN,
                "num_layers": LAYERS,
                "bidirectional": True,
            }
        )
    ).eval()
    dense = INPUT + LAYERS * HIDDEN
    assert encoder.get_input_dim() == INPUT
    assert encoder.get_output_dim() == 2 * dense
    assert encoder.is_bidirectional() and encoder.num_layers == LAYERS
    output = encoder(inputs, mask)
    assert output.shape == (3, 6, 2 * dense)
    assert torch.allclose(output[..., :dense], encoder.forward_stack(inputs, mask))
    assert torch.allclose(output[..., dense:], run_backward(encoder.backward_stack, inputs, mask))
    encoder.return_all_layers = True
    layers = encoder(inputs, mask)
    assert encoder.get_output_dim() == 2 * dense  # unchanged by return_all_layers
    assert len(layers) == LAYERS
    assert all(layer.shape == (3, 6, 2 * dense) for layer in layers)
    assert torch.equal(layers[-1], output)
    for index, layer in enumerate(layers, start=1):
        kept = INPUT + index * HIDDEN  # per direction: [x; h_1; ...; h_index], then zeros
        for half in (slice(0, dense), slice(dense, 2 * dense)):
            assert torch.equal(layer[..., half][..., :kept], output[..., half][..., :kept])
            assert not layer[..., half][..., kept:].any()
    # ... and the kept prefix is the stacks' own pieces [x, h_1, ..., h_index] per direction.
    forward_pieces = encoder.forward_stack.forward_layers(inputs, mask)
    backward_pieces = run_backward(encoder.backward_stack, inputs, mask, return_all_layers=True)
    for index, layer in enumerate(layers, start=1):
        kept = INPUT + index * HIDDEN
        assert torch.allclose(layer[..., :kept], torch.cat(forward_pieces[: index + 1], -1))
        assert torch.allclose(
            layer[..., dense : dense + kept], torch.cat(backward_pieces[: index + 1], -1)
        )


def test_encoder_inside_allennlp_models():
    # `dense_lstm` as the encoder of allennlp-models' simple_tagger and, through a seq2vec
    # wrapper (`cls_pooler` reads position 0 of the backward half), of basic_classifier.
    from allennlp.data import Vocabulary
    from allennlp.models import Model

    import allennlp_models.classification  # noqa: F401
    import allennlp_models.tagging  # noqa: F401

    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["a", "b", "c"], "tokens")
    vocab.add_tokens_to_namespace(["X", "Y"], "labels")
    embedder = {"token_embedders": {"tokens": {"type": "embedding", "embedding_dim": INPUT}}}
    encoder = {
        "type": "dense_lstm",
        "input_size": INPUT,
        "hidden_size": HIDDEN,
        "num_layers": 2,
        "bidirectional": True,
        "layer_dropout": 0.5,
    }
    tokens = {"tokens": {"tokens": torch.tensor([[2, 3, 4], [3, 4, 0]])}}
    tagger = Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "simple_tagger",
                "text_field_embedder": copy.deepcopy(embedder),
                "encoder": copy.deepcopy(encoder),
            }
        ),
    )
    output = tagger(tokens=tokens, tags=torch.tensor([[0, 1, 0], [1, 1, 0]]))
    output["loss"].backward()
    assert output["logits"].shape == (2, 3, 2)
    classifier = Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "basic_classifier",
                "text_field_embedder": embedder,
                "seq2seq_encoder": encoder,
                "seq2vec_encoder": {
                    "type": "cls_pooler",
                    "embedding_dim": 2 * (INPUT + 2 * HIDDEN),
                },
            }
        ),
    )
    output = classifier(tokens=tokens, label=torch.tensor([0, 1]))
    assert output["logits"].shape == (2, 2)
