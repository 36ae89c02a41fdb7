"""The BiLSTM student: train/save/load, the loss formula, pair features, masks, label order."""

import json
import re

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch

from ldnet_allennlp.distillation.classification.dataset_readers import TransferSetReader
from ldnet_allennlp.distillation.classification.models import (
    DistillationModel,
    distillation_loss,
    pair_features,
)
from tests.distillation.conftest import DISTILLATION_FIXTURES


class TestSingleSentenceStudent(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            DISTILLATION_FIXTURES / "student_sst2.jsonnet",
            DISTILLATION_FIXTURES / "transfer" / "sst2_aug.jsonl",
        )

    def test_train_save_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_batch_predictions_equal_single(self):
        self.ensure_batch_predictions_are_consistent()

    def test_sentence_vector_ignores_padding(self):
        # The same sentence alone and padded next to a longer one gets the same vector.
        reader = TransferSetReader()
        short = reader.text_to_instance(sentence="a good film")
        long = reader.text_to_instance(sentence="the film is really very good and funny .")
        self.model.eval()
        alone = Batch([short])
        alone.index_instances(self.vocab)
        padded = Batch([short, long])
        padded.index_instances(self.vocab)
        with torch.no_grad():
            vector_alone = self.model.encode(alone.as_tensor_dict()["tokens"])
            vector_padded = self.model.encode(padded.as_tensor_dict()["tokens"])
        assert torch.allclose(vector_alone[0], vector_padded[0], atol=1e-6)

    def test_teacher_logits_are_reordered_to_the_student_labels(self):
        labels = [self.vocab.get_token_from_index(i, "labels") for i in range(2)]
        reversed_labels = tuple(reversed(labels))
        order = self.model.teacher_order(reversed_labels)
        assert order.tolist() == [1, 0]
        with pytest.raises(ConfigurationError, match="differs from the student"):
            self.model.teacher_order(("NEUTRAL", "ENTAILMENT", "CONTRADICTION"))

    def test_label_mismatch_error_names_the_transfer_set_file(self, tmp_path):
        # a transfer set whose teacher was trained on other labels (its rows are valid)
        transfer_set = tmp_path / "other_task.jsonl"
        header = {"transfer_set": {"teacher_labels": ["positive", "negative"]}}
        rows = [{"sentence": "a good film", "label": "positive", "teacher_logits": [2.0, -1.0]}]
        lines = [json.dumps(header)] + [json.dumps(row) for row in rows]
        transfer_set.write_text("\n".join(lines) + "\n", encoding="utf-8")
        instances = list(TransferSetReader().read(str(transfer_set)))
        assert instances[0]["metadata"].metadata["transfer_set"] == str(transfer_set)
        self.vocab.add_tokens_to_namespace(["positive", "negative"], "labels")  # indexable labels
        with pytest.raises(
            ConfigurationError,
            match=re.escape(
                f"['positive', 'negative'] (header of transfer set {transfer_set}) differs from "
                "the student's label vocabulary"
            ),
        ):
            self.model(**_tensors(instances, self.vocab))

    def test_f1_for_the_positive_label(self):
        self.model(**self.dataset.as_tensor_dict())
        metrics = self.model.get_metrics()
        assert {"accuracy", "precision", "recall", "f1"} <= set(metrics)

    def test_encoder_embedder_mismatch_is_a_configuration_error(self):
        from allennlp.modules.seq2vec_encoders import LstmSeq2VecEncoder

        with pytest.raises(ConfigurationError, match="encoder input dim 7"):
            DistillationModel(
                self.vocab,
                self.model.text_field_embedder,
                LstmSeq2VecEncoder(7, 4, bidirectional=True),
            )


class TestPairStudent(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            DISTILLATION_FIXTURES / "student_sick.jsonnet",
            DISTILLATION_FIXTURES / "transfer" / "sick_aug.jsonl",
        )

    def test_train_save_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_batch_predictions_equal_single(self):
        self.ensure_batch_predictions_are_consistent()

    def test_siamese_features_are_symmetric(self):
        # One encoder for both sentences: swapping them swaps h1/h2 and leaves
        # h1*h2 and |h1-h2| unchanged.
        reader = TransferSetReader()
        ab = reader.text_to_instance(
            premise="a man is eating", hypothesis="a dog is riding a horse"
        )
        ba = reader.text_to_instance(
            premise="a dog is riding a horse", hypothesis="a man is eating"
        )
        self.model.eval()
        batch = Batch([ab, ba])
        batch.index_instances(self.vocab)
        tensors = batch.as_tensor_dict()
        with torch.no_grad():
            h1 = self.model.encode(tensors["premise"])
            h2 = self.model.encode(tensors["hypothesis"])
        features = pair_features(h1, h2)
        dim = h1.size(1)
        assert features.shape == (2, 4 * dim)
        assert torch.allclose(features[0, :dim], features[1, dim : 2 * dim], atol=1e-6)
        assert torch.allclose(features[0, 2 * dim :], features[1, 2 * dim :], atol=1e-6)

    def test_pair_model_needs_pair_inputs(self):
        single = Batch([TransferSetReader().text_to_instance(sentence="a man is eating")])
        single.index_instances(self.vocab)
        with pytest.raises(ConfigurationError, match="premise"):
            self.model(**single.as_tensor_dict())


def test_pair_features_by_hand():
    h1 = torch.tensor([[1.0, -2.0]])
    h2 = torch.tensor([[3.0, 1.0]])
    assert pair_features(h1, h2).tolist() == [[1.0, -2.0, 3.0, 1.0, 3.0, -2.0, 2.0, 3.0]]


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_loss_equals_hand_computation(alpha):
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    teacher = torch.tensor([[1.0, 1.0], [-1.0, 2.0]])
    labels = torch.tensor([0, 0])
    # CE per example: -log softmax(logits)[label]
    ce_1 = -(2.0 - torch.log(torch.exp(torch.tensor(2.0)) + 1.0))
    ce_2 = -(0.0 - torch.log(1.0 + torch.exp(torch.tensor(1.0))))
    cross_entropy = (ce_1 + ce_2) / 2
    # ||z_t - z_s||^2 per example: (1 + 1) and (1 + 1), mean 2
    mse = (((1 - 2) ** 2 + (1 - 0) ** 2) + ((-1 - 0) ** 2 + (2 - 1) ** 2)) / 2
    expected = alpha * cross_entropy + (1 - alpha) * mse
    assert distillation_loss(logits, labels, teacher, alpha).item() == pytest.approx(
        expected.item(), abs=1e-6
    )


def test_loss_without_teacher_is_cross_entropy():
    logits = torch.tensor([[2.0, 0.0]])
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([1]))
    assert distillation_loss(logits, torch.tensor([1]), None, 0.0).item() == pytest.approx(
        expected.item()
    )


def _tensors(instances, vocab):
    batch = Batch(instances)
    batch.index_instances(vocab)
    return batch.as_tensor_dict()
