import math

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Vocabulary
from allennlp.models import Model

import ldnet_allennlp  # noqa: F401
from ldnet_allennlp.lm import DenseLMTextDatasetReader
from ldnet_allennlp.modules import DenseLSTMStack, run_backward

FIXTURE = "fixtures/lm/dense_lm.jsonnet"
TRAIN = "fixtures/lm/lm_fixture_train.txt"


class TestDenseLanguageModel(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(FIXTURE, TRAIN)

    @pytest.mark.parametrize("direction", ["forward", "backward"])
    def test_train_save_load(self, direction):
        self.ensure_model_can_train_save_and_load(
            FIXTURE,
            overrides='{"model.direction": "%s"}' % direction,
            gradients_to_ignore=None,
        )

    def test_contextual_api(self):
        model = self.model.eval()
        batch = self.dataset.as_tensor_dict()
        source = batch["source"]
        token_ids = source["tokens"]["tokens"]
        mask = token_ids != 0
        dense = model.contextual_embeddings(token_ids, mask)
        assert (
            dense.shape
            == (*token_ids.shape, 6 + 3 * 4)
            == (*token_ids.shape, model.get_output_dim())
        )
        assert torch.allclose(model.contextual_embeddings(source), dense)
        layers = model.contextual_layers(token_ids)
        assert [layer.shape[-1] for layer in layers] == [6, 4, 4, 4]
        assert torch.allclose(torch.cat(layers, -1), dense)
        # An external layer mask receives gradients.
        layer_mask = torch.ones(3, requires_grad=True)
        model.contextual_embeddings(token_ids, mask, layer_mask).sum().backward()
        assert layer_mask.grad is not None
        # Sentence boundaries added and removed again.
        words = token_ids[:, 1:]  # drop <S>; </S> stays but that does not matter for shapes
        wrapped = model.contextual_embeddings(words, add_sentence_boundaries=True)
        assert wrapped.shape == (*words.shape, model.get_output_dim())
        # Feature extraction without the head.
        model.drop_softmax()
        output = model(source)
        assert "loss" not in output and output["lm_embeddings"].shape == dense.shape

    def test_backward_model_reads_right_to_left(self):
        self.model.direction = "backward"
        model = self.model.eval()
        token_ids = self.dataset.as_tensor_dict()["source"]["tokens"]["tokens"]
        mask = token_ids != 0
        embedded = model.embed_tokens(token_ids)
        assert torch.allclose(
            model.contextual_embeddings(token_ids, mask),
            run_backward(model.encoder, embedded, mask),
        )


def toy_model(direction):
    vocab = Vocabulary()
    for word in ["<S>", "</S>", "a", "b"]:
        vocab.add_token_to_namespace(word, "tokens")
    return Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "dense_language_model",
                "direction": direction,
                "text_field_embedder": {
                    "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 3}}
                },
                "encoder": {"input_size": 3, "hidden_size": 2, "num_layers": 2},
                "projection_dim": 4,
                "cutoffs": [3],
                "dropout": 0.0,
            }
        ),
    ).eval()


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_perplexity_is_exp_of_mean_token_nll(direction):
    torch.manual_seed(0)
    model = toy_model(direction)
    # vocab: 0 pad, 1 OOV, 2 <S>, 3 </S>, 4 a, 5 b
    batches = [
        torch.tensor([[2, 4, 5, 3], [2, 5, 3, 0]]),  # 3 + 2 = 5 predicted tokens
        torch.tensor([[2, 4, 4, 5, 4, 3]]),  # 5 predicted tokens
    ]
    expected_nlls = []
    for token_ids in batches:
        output = model({"tokens": {"tokens": token_ids}})
        # Hand check: every predicted token's log-probability from the full distribution.
        with torch.no_grad():
            dense = model.contextual_embeddings(token_ids)
            hidden = torch.relu(model._projection(dense))
            log_probs = model._softmax.log_prob(hidden.view(-1, 4)).view(*token_ids.shape, -1)
        nlls = []
        for b, row in enumerate(token_ids.tolist()):
            n = sum(1 for t in row if t != 0)
            for t in range(n):
                target = t + 1 if direction == "forward" else t - 1
                if 0 <= target < n:
                    nlls.append(-float(log_probs[b, t, row[target]]))
        assert output["num_targets"] == len(nlls)
        assert float(output["loss"].detach()) == pytest.approx(sum(nlls) / len(nlls), rel=1e-5)
        expected_nlls.extend(nlls)
    assert len(expected_nlls) == 10
    # Token-weighted over batches (not the mean of the two batch means).
    expected = math.exp(sum(expected_nlls) / len(expected_nlls))
    assert model.get_metrics(reset=True)["perplexity"] == pytest.approx(expected, rel=1e-5)
    assert model.get_metrics()["perplexity"] == 0.0


def test_perplexity_of_uniform_model_is_vocab_size():
    model = toy_model("forward")
    with torch.no_grad():
        for parameter in model._softmax.parameters():
            parameter.zero_()
    model({"tokens": {"tokens": torch.tensor([[2, 4, 5, 3]])}})
    # All logits 0: head is uniform over 3 words + 1 cluster; the tail cluster splits evenly.
    head = 1 / 4  # tokens 0..2
    tail = (1 / 4) * (1 / 3)  # tokens 3..5
    expected = math.exp(-(math.log(tail) * 3) / 3)  # targets 4, 5, 3 are all tail tokens
    assert model.get_metrics()["perplexity"] == pytest.approx(expected, rel=1e-5)
    assert head > tail


def bad_params(**changes):
    params = {
        "type": "dense_language_model",
        "text_field_embedder": {
            "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 3}}
        },
        "encoder": {"input_size": 3, "hidden_size": 2, "num_layers": 2},
        "projection_dim": 4,
        "cutoffs": [3],
    }
    for key, value in changes.items():
        if "." in key:
            outer, inner = key.split(".")
            params[outer][inner] = value
        else:
            params[key] = value
    return Params(params)


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"encoder.input_size": 5}, "encoder.input_size"),
        ({"encoder.num_layers": 0}, "num_layers"),
        ({"encoder.dropout": 1.0}, "dropout"),
        ({"encoder.layer_dropout": -0.2}, "layer_dropout"),
        ({"dropout": 1.5}, "dropout"),
        ({"cutoffs": [3, 2]}, "cutoffs"),
        ({"cutoffs": [6]}, "cutoffs"),
        ({"cutoffs": [2, 2]}, "cutoffs"),
        ({"direction": "sideways"}, "direction"),
        ({"projection_dim": 3}, "projection_dim"),
    ],
)
def test_bad_config(changes, key):
    vocab = Vocabulary()
    for word in ["<S>", "</S>", "a", "b"]:
        vocab.add_token_to_namespace(word, "tokens")
    with pytest.raises(ConfigurationError, match=key):
        Model.from_params(vocab=vocab, params=bad_params(**changes))


def test_reader(tmp_path):
    reader = DenseLMTextDatasetReader(max_sequence_length=6)
    path = tmp_path / "lm.txt"
    path.write_text("a b c\n\nd e f g h\n")
    instances = list(reader.read(str(path)))
    assert len(instances) == 1  # blank line skipped, the 7-token sentence dropped
    assert [t.text for t in instances[0]["source"].tokens] == ["<S>", "a", "b", "c", "</S>"]
    with pytest.raises(ConfigurationError, match="empty.txt"):
        list(reader.read("fixtures/lm/empty.txt"))


def test_pruned_encoder_config_builds_same_stack():
    stack = DenseLSTMStack.from_params(
        Params({"input_size": 3, "hidden_size": 2, "num_layers": 2, "kept_layers": [0, 4]})
    )
    assert stack.kept_layers == [0, 4] and stack.get_output_dim() == 7
