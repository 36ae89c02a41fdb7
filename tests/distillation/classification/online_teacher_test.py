"""
The student's optional online teacher (`distillation_student.teacher_archive`): the same loss as
with the teacher's logits precomputed, a frozen teacher outside the student's state, a student
archive that predicts and evaluates without the teacher, and the teacher's bad inputs.
"""

import json
import os
import shutil

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
from allennlp.training.util import evaluate
from allennlp.data.data_loaders import SimpleDataLoader

from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
from ldnet_allennlp.distillation.classification.transfer_set import build_transfer_set
from ldnet_allennlp.distillation.classification.dataset_readers import (
    DistillationTsvReader,
    TransferSetReader,
)
from ldnet_allennlp.distillation.classification.models import distillation_loss
from ldnet_allennlp.distillation.classification.models import distillation_model
from tests.distillation.conftest import DISTILLATION_FIXTURES
from tests.distillation.teacher_archive import fixture_teacher_archive

ONLINE_CONFIG = DISTILLATION_FIXTURES / "student_sst2_online.jsonnet"
SST2_TRAIN = str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_train.tsv")
SST2_DEV = str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_dev.tsv")


@pytest.fixture(scope="module")
def teacher(teacher_archive):
    """The teacher loaded independently of the student: (model in eval mode, its label order)."""
    archive = load_archive(teacher_archive)
    model = archive.model.eval()
    labels = [model.vocab.get_token_from_index(i, "labels") for i in range(2)]
    return model, archive.validation_dataset_reader, labels


def online_student(teacher_archive, labels, **model_overrides):
    """The fixture's online student (dropout 0), its label vocabulary in the order `labels`."""
    params = Params.from_file(
        str(ONLINE_CONFIG), ext_vars={"SST2_TEACHER_ARCHIVE": teacher_archive}
    )
    instances = list(DistillationTsvReader().read(SST2_TRAIN))
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(list(labels), "labels")
    vocab.extend_from_instances(instances)
    model_params = params.pop("model")
    for key, value in model_overrides.items():
        model_params[key] = value
    return Model.from_params(vocab=vocab, params=model_params)


def tensors(instances, vocab):
    batch = Batch(instances)
    batch.index_instances(vocab)
    return batch.as_tensor_dict()


class TestOnlineTeacherStudent(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self._saved = os.environ.get("SST2_TEACHER_ARCHIVE")
        os.environ["SST2_TEACHER_ARCHIVE"] = fixture_teacher_archive()
        self.set_up_model(ONLINE_CONFIG, SST2_TRAIN)

    def teardown_method(self):
        if self._saved is None:
            os.environ.pop("SST2_TEACHER_ARCHIVE", None)
        else:
            os.environ["SST2_TEACHER_ARCHIVE"] = self._saved
        super().teardown_method()

    def test_train_save_load(self):
        # the reloaded student gets the same loss: it computes the same teacher logits
        self.ensure_model_can_train_save_and_load(self.param_file)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_online_loss_equals_loss_with_precomputed_teacher_logits(teacher_archive, teacher, alpha):
    teacher_model, teacher_reader, teacher_labels = teacher
    # the student's labels in the other order: the teacher's columns must be swapped
    student = online_student(teacher_archive, reversed(teacher_labels), alpha=alpha)
    assert student.teacher_order(teacher_labels).tolist() == [1, 0]
    reader = DistillationTsvReader(keep_text=True)
    instances = list(reader.read(SST2_TRAIN))[:16]
    sentences = [i["metadata"].metadata["texts"][0] for i in instances]
    assert sentences[0] == "a very great story"  # stripped, as the transfer set has it
    batch = tensors(instances, student.vocab)
    student.train()  # a training batch (the fixture student has no dropout)
    online = student(**batch)

    # the teacher run by hand through its own reader, its columns put in the student's order
    teacher_instances = [teacher_reader.text_to_instance(sentence=s) for s in sentences]
    with torch.no_grad():
        by_hand = teacher_model(**tensors(teacher_instances, teacher_model.vocab))["logits"]
    by_hand = by_hand[:, [teacher_labels.index(label) for label in reversed(teacher_labels)]]
    expected = distillation_loss(online["logits"], batch["label"], by_hand, alpha)
    assert online["loss"].item() == pytest.approx(expected.item(), abs=1e-5)
    # and the same batch given those logits as a transfer set gives them (teacher's order)
    offline = student(
        tokens=batch["tokens"],
        label=batch["label"],
        teacher_logits=by_hand[:, [1, 0]],
        metadata=[{"teacher_labels": tuple(teacher_labels)}] * len(instances),
    )
    assert offline["loss"].item() == pytest.approx(online["loss"].item(), abs=1e-5)
    if alpha < 1.0:  # the teacher term is really there
        cross_entropy = torch.nn.functional.cross_entropy(online["logits"], batch["label"])
        assert abs(online["loss"].item() - alpha * cross_entropy.item()) > 1e-3


def test_online_loss_equals_loss_on_the_transfer_set_of_the_same_teacher(
    teacher_archive, teacher, tmp_path
):
    """`distill-transfer-set --n-iter 0` (logits rounded to 5 decimals) vs the online teacher."""
    teacher_model, teacher_reader, teacher_labels = teacher
    transfer_set = tmp_path / "sst2.jsonl"
    rules = AugmentationRules(p_mask=0.1, p_pos=0.1, p_ng=0.25, n_iter=0)
    build_transfer_set(teacher_model, teacher_reader, SST2_TRAIN, str(transfer_set), rules)
    offline_instances = list(TransferSetReader().read(str(transfer_set)))
    rows = [json.loads(line) for line in transfer_set.read_text().splitlines()[1:]]
    reader = DistillationTsvReader(keep_text=True)
    online_instances = [
        reader.text_to_instance(sentence=r["sentence"], label=r["label"]) for r in rows
    ]
    student = online_student(teacher_archive, teacher_labels, alpha=0.0)
    student.train()
    for start in range(0, len(rows), 16):
        online = student(**tensors(online_instances[start : start + 16], student.vocab))
        offline = student(**tensors(offline_instances[start : start + 16], student.vocab))
        assert torch.equal(online["logits"], offline["logits"])
        assert online["loss"].item() == pytest.approx(offline["loss"].item(), abs=1e-4)


def test_teacher_is_loaded_once_frozen_and_outside_the_student(teacher_archive, monkeypatch):
    loads = []
    real_load_archive = distillation_model.load_archive
    monkeypatch.setattr(
        distillation_model,
        "load_archive",
        lambda *args, **kwargs: loads.append(args) or real_load_archive(*args, **kwargs),
    )
    student = online_student(teacher_archive, ["0", "1"])
    assert loads == []  # nothing loaded before a batch needs it
    batch = tensors(list(DistillationTsvReader(keep_text=True).read(SST2_TRAIN))[:8], student.vocab)
    student.train()
    optimizer = torch.optim.SGD(student.parameters(), lr=0.5)
    student(**batch)["loss"].backward()
    teacher = student.online_teacher(torch.device("cpu"))[0]
    before = {name: p.detach().clone() for name, p in teacher.named_parameters()}
    student_before = {name: p.detach().clone() for name, p in student.named_parameters()}
    optimizer.step()
    student.zero_grad()
    student.train()
    student(**batch)["loss"].backward()
    optimizer.step()
    assert len(loads) == 1
    # frozen: no gradient, no change; in eval mode although the student trains
    assert not teacher.training and student.training
    assert all(not p.requires_grad and p.grad is None for p in teacher.parameters())
    assert all(torch.equal(before[name], p) for name, p in teacher.named_parameters())
    assert any(not torch.equal(student_before[n], p) for n, p in student.named_parameters())
    # not part of the student: parameters, state_dict, submodules
    teacher_ids = {id(p) for p in teacher.parameters()}
    assert not teacher_ids & {id(p) for p in student.parameters()}
    assert not any(m is teacher for m in student.modules())
    assert not any("bert" in key or "teacher" in key for key in student.state_dict())


def test_student_archive_predicts_and_evaluates_without_the_teacher(teacher_archive, tmp_path):
    moved = tmp_path / "teacher.tar.gz"
    shutil.copy(teacher_archive, moved)
    params = Params.from_file(str(ONLINE_CONFIG), ext_vars={"SST2_TEACHER_ARCHIVE": str(moved)})
    params["trainer"]["num_epochs"] = 1
    train_model(params, str(tmp_path / "student"))
    os.remove(moved)  # the student's archive is used where the teacher is not

    archive = load_archive(str(tmp_path / "student" / "model.tar.gz"))
    assert archive.model.teacher_archive == str(moved) and not archive.model._online_teacher
    predictor = Predictor.from_archive(archive)
    output = predictor.predict_json({"sentence": "a very great story"})
    assert output["label"] in ("0", "1") and sum(output["probs"]) == pytest.approx(1.0)
    dev = list(archive.validation_dataset_reader.read(SST2_DEV))
    for instance in dev:
        instance.index_fields(archive.model.vocab)
    metrics = evaluate(archive.model, SimpleDataLoader(dev, 4), cuda_device=-1)
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["loss"] > 0.0
    # training on, which does need the teacher, says so
    batch = tensors(
        list(DistillationTsvReader(keep_text=True).read(SST2_TRAIN))[:4], archive.model.vocab
    )
    archive.model.train()
    with pytest.raises(
        ConfigurationError, match=r"model.teacher_archive '.*teacher.tar.gz': no such file"
    ):
        archive.model(**batch)


# -- bad input ------------------------------------------------------------------------------------


def test_teacher_with_another_label_set_is_a_configuration_error(teacher_archive):
    student = online_student(teacher_archive, ["positive", "negative"])
    with pytest.raises(
        ConfigurationError,
        match=r"teacher's label vocabulary \[.*\] \(model.teacher_archive '.*model.tar.gz'\) "
        r"differs from the student's label vocabulary \['positive', 'negative'",
    ):
        student.online_teacher(torch.device("cpu"))


def test_single_sentence_teacher_for_a_pair_student_is_a_configuration_error(teacher_archive):
    student = online_student(teacher_archive, ["0", "1"], sentence_pair=True)
    with pytest.raises(
        ConfigurationError, match=r"model.teacher_archive '.*': the teacher reads single sentences"
    ):
        student.online_teacher(torch.device("cpu"))


def test_training_batch_without_raw_text_is_a_configuration_error(teacher_archive):
    student = online_student(teacher_archive, ["0", "1"])
    batch = tensors(list(DistillationTsvReader().read(SST2_TRAIN))[:4], student.vocab)
    student.train()
    with pytest.raises(ConfigurationError, match="keep_text: true"):
        student(**batch)
    # an evaluation batch without raw text (the plain validation reader) is scored on its gold
    # labels alone, without loading the teacher
    student.eval()
    output = student(**batch)
    expected = torch.nn.functional.cross_entropy(output["logits"], batch["label"])
    assert output["loss"].item() == pytest.approx(expected.item(), abs=1e-6)
    assert student._online_teacher == []


def test_unlabelled_rows_take_the_teachers_argmax(teacher_archive, teacher, tmp_path):
    _, _, teacher_labels = teacher
    unlabelled = tmp_path / "unlabelled.tsv"
    unlabelled.write_text("sentence\na very great story\na often clumsy film\n", encoding="utf-8")
    instances = list(DistillationTsvReader(keep_text=True).read(str(unlabelled)))
    assert "label" not in instances[0].fields
    student = online_student(teacher_archive, teacher_labels, alpha=1.0)  # CE on the hard labels
    batch = tensors(instances, student.vocab)
    student.train()
    output = student(**batch)
    teacher_logits = student.online_teacher_logits(
        [i["metadata"].metadata for i in instances], torch.device("cpu")
    )
    expected = torch.nn.functional.cross_entropy(output["logits"], teacher_logits.argmax(-1))
    assert output["loss"].item() == pytest.approx(expected.item(), abs=1e-6)
    # predicting (eval mode, no label) runs no teacher and computes no loss
    student.eval()
    assert "loss" not in student(**batch)
