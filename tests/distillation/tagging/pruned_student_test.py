"""
Pruned students distilled from a tagger: a teacher's soft targets (an ensemble of CRF
taggers), the tagging transfer set (resumable to the same bytes), the student's distillation
loss, and a student trained on the fixtures that is an ordinary tagger archive.
"""

import json
import os
import re
import signal

import numpy
import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.commands.train import train_model
from allennlp.models.archival import load_archive
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.predictors import Predictor

from ldnet_allennlp.distillation.tagging.dataset_readers.tagging_distillation import (
    TaggingDistillationReader,
)
from ldnet_allennlp.distillation.tagging.teacher import CrfEnsembleTeacher, silver_tags
from ldnet_allennlp.distillation.tagging.transfer_set import build_tagging_transfer_set
from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_allennlp.pruning.cut_layers import prune_archive
from ldnet_allennlp.tagging.crf_marginals import crf_distillation_kl, crf_marginals
from ldnet_allennlp.tagging.models.crf_tagger import crf_tagger_emissions
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.pruning.cut_layers_test import data_ext_vars, masked_archive, phase1  # noqa: F401

SENTENCES = [
    "John Smith visited Paris .".split(),
    "Shares in Acme Corp rose 3 percent in Germany .".split(),
    ["Reuters"],
    "The European Commission said on Thursday it disagreed with German advice .".split(),
]


@pytest.fixture(scope="module")
def teacher(phase1):  # noqa: F811  (the imported fixture)
    """The pruning tests' ner_ldnet tagger trained on the fixtures (`cut_layers_test.phase1`)."""
    return str(phase1)


@pytest.fixture(scope="module")
def news(tmp_path_factory):
    """An unlabelled sentence file: the fixture sentences, repeated with a counter."""
    path = tmp_path_factory.mktemp("news") / "news.txt"
    lines = [" ".join(s + [str(i)]) for i in range(9) for s in SENTENCES]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_ensemble_of_one_tagger_is_that_tagger(teacher, one_torch_thread):
    model = load_archive(teacher).model.eval()
    ensemble = CrfEnsembleTeacher([teacher])
    twice = CrfEnsembleTeacher([teacher, teacher])
    got, got_twice = ensemble.marginals(SENTENCES), twice.marginals(SENTENCES)
    reader = ensemble.readers[0]
    for words, mine, doubled in zip(SENTENCES, got, got_twice):
        from allennlp.data import Batch

        batch = Batch(ensemble._instances(reader, [words]))
        batch.index_instances(model.vocab)
        with torch.no_grad():
            logits, mask = crf_tagger_emissions(model, batch.as_tensor_dict()["tokens"])
            expected = crf_marginals(model.crf, logits, mask)[0].numpy()
        assert mine.shape == (len(words), len(ensemble.labels))
        numpy.testing.assert_allclose(mine, expected, atol=1e-6)
        numpy.testing.assert_allclose(doubled, mine, atol=1e-6)
        numpy.testing.assert_allclose(mine.sum(axis=1), 1.0, atol=1e-5)


def test_an_ensemble_averages_and_a_tag_one_tagger_lacks_counts_zero(
    teacher, monkeypatch, one_torch_thread
):
    single = CrfEnsembleTeacher([teacher]).marginals(SENTENCES)
    ensemble = CrfEnsembleTeacher([teacher, teacher])
    lacking = 3
    # the second tagger as one without tag 3: its column is the zero column
    ensemble.columns[1] = ensemble.columns[1].clone()
    ensemble.columns[1][lacking] = len(ensemble.labels)
    for mine, alone in zip(ensemble.marginals(SENTENCES), single):
        numpy.testing.assert_allclose(mine[:, lacking], alone[:, lacking] / 2, atol=1e-6)
        others = [k for k in range(len(ensemble.labels)) if k != lacking]
        numpy.testing.assert_allclose(mine[:, others], alone[:, others], atol=1e-6)
    with pytest.raises(ConfigurationError, match="at least one"):
        CrfEnsembleTeacher([])
    import ldnet_allennlp.distillation.tagging.teacher as tagging_teacher

    real = tagging_teacher.label_order
    calls = []

    def other_tags_the_second_time(model, namespace):
        calls.append(namespace)
        labels = real(model, namespace)
        return labels if len(calls) == 1 else [f"X-{tag}" for tag in labels]

    monkeypatch.setattr(tagging_teacher, "label_order", other_tags_the_second_time)
    with pytest.raises(ConfigurationError, match="an ensemble needs one tag set"):
        CrfEnsembleTeacher([teacher, teacher])


def test_the_distillation_loss_is_zero_when_the_student_is_the_teacher():
    torch.manual_seed(0)
    crf = ConditionalRandomField(4, include_start_end_transitions=True)
    torch.nn.init.normal_(crf.transitions)
    logits = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]).bool()
    teacher = crf_marginals(crf, logits, mask)
    assert crf_distillation_kl(crf, logits, mask, teacher).abs().item() < 1e-5
    other = crf_distillation_kl(crf, logits + torch.randn(3, 5, 4), mask, teacher)
    assert other.item() > 1e-3


def test_the_distillation_loss_is_the_kl_by_hand():
    """Σ_t Σ_k q log(q/p) with p from brute-force enumeration of every tag sequence."""
    import itertools

    torch.manual_seed(1)
    crf = ConditionalRandomField(3, include_start_end_transitions=True)
    torch.nn.init.normal_(crf.transitions)
    torch.nn.init.normal_(crf.start_transitions)
    torch.nn.init.normal_(crf.end_transitions)
    logits, mask = torch.randn(1, 3, 3), torch.ones(1, 3, dtype=torch.bool)
    q = torch.softmax(torch.randn(1, 3, 3), dim=2)
    scores = {}
    for tags in itertools.product(range(3), repeat=3):
        score = crf.start_transitions[tags[0]] + crf.end_transitions[tags[-1]]
        score = score + sum(logits[0, t, k] for t, k in enumerate(tags))
        score = score + sum(crf.transitions[a, b] for a, b in zip(tags, tags[1:]))
        scores[tags] = score
    log_z = torch.logsumexp(torch.stack(list(scores.values())), dim=0)
    p = torch.zeros(3, 3)
    for tags, score in scores.items():
        for t, k in enumerate(tags):
            p[t, k] += torch.exp(score - log_z)
    expected = (q[0] * (q[0].log() - p.log())).sum()
    got = crf_distillation_kl(crf, logits, mask, q)
    assert got.item() == pytest.approx(expected.item(), abs=1e-5)


def _rows(tensors, index: torch.Tensor):
    """The rows `index` of every tensor in a (nested) batch dict."""
    if isinstance(tensors, dict):
        return {key: _rows(value, index) for key, value in tensors.items()}
    return tensors[index]


@pytest.mark.parametrize("loss", ["kl", "silver"])
def test_the_students_loss_is_the_gold_nll_plus_the_weighted_distillation_term(
    teacher, news, tmp_path, loss
):
    """On a batch of gold and transfer sentences, the student's loss is the plain CRF tagger's
    loss on the gold rows plus `distillation_weight` times the KL to the teacher's marginals
    (tested by hand above) or the CRF loss of the silver tags, on the transfer rows."""
    from allennlp.data import Batch

    transfer = tmp_path / "transfer.jsonl"
    build_tagging_transfer_set(
        CrfEnsembleTeacher([teacher]), str(news), str(transfer), ["t"], batch_size=8
    )
    archive = load_archive(teacher)
    model = archive.model.eval()
    model.distillation_loss, model.distillation_weight = loss, 0.7
    reader = TaggingDistillationReader(archive.dataset_reader, str(transfer), transfer_sentences=3)
    instances = list(reader.read(str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")))
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    is_transfer = tensors["transfer"] > 0.5
    assert 0 < int(is_transfer.sum()) < len(instances)
    gold, moved = (~is_transfer).nonzero().view(-1), is_transfer.nonzero().view(-1)

    with torch.no_grad():
        combined = model(**tensors)["loss"]
        gold_loss = model(_rows(tensors["tokens"], gold), tensors["tags"][gold])["loss"]
        if loss == "kl":
            student = model(_rows(tensors["tokens"], moved))
            labels = tensors["metadata"][0]["teacher_labels"]
            own = [model.vocab.get_token_from_index(i, "labels") for i in range(model.num_tags)]
            columns = [labels.index(tag) for tag in own]
            targets = tensors["teacher_marginals"][moved][:, :, columns]
            term = crf_distillation_kl(model.crf, student["logits"], student["mask"], targets)
        else:
            term = model(_rows(tensors["tokens"], moved), tensors["tags"][moved])["loss"]
    assert term.item() > 0
    assert combined.item() == pytest.approx((gold_loss + 0.7 * term).item(), rel=1e-5)


def test_silver_tags_are_valid_span_sequences():
    labels = ["O", "B-PER", "L-PER", "U-PER", "I-PER"]
    # per-token argmax would give I-PER, O: not a valid BIOUL sequence
    marginals = [numpy.array([[0.1, 0.0, 0.0, 0.4, 0.5], [0.9, 0.0, 0.1, 0.0, 0.0]])]
    assert silver_tags(marginals, labels, "BIOUL") == [["U-PER", "O"]]
    assert silver_tags(marginals, labels, None) == [["I-PER", "O"]]


class _Killed(Exception):
    pass


class _DyingTeacher:
    """Delegates to a teacher and raises after `batches` batches (a kill mid-run)."""

    def __init__(self, teacher, batches):
        self.teacher, self.left = teacher, batches
        self.labels, self.label_encoding = teacher.labels, teacher.label_encoding

    def soft_targets(self, sentences):
        if self.left == 0:
            raise _Killed()
        self.left -= 1
        return self.teacher.soft_targets(sentences)


def test_the_transfer_set_resumes_after_a_kill_to_the_same_bytes(
    teacher, news, tmp_path, one_torch_thread
):
    ensemble = CrfEnsembleTeacher([teacher])
    whole, resumed = tmp_path / "whole.jsonl", tmp_path / "resumed.jsonl"
    settings = dict(teacher_names=["t"], batch_size=4)
    summary = build_tagging_transfer_set(ensemble, str(news), str(whole), **settings)
    assert summary["rows"] == 36 and summary["labelled_now"] == 36
    with pytest.raises(_Killed):
        build_tagging_transfer_set(_DyingTeacher(ensemble, 3), str(news), str(resumed), **settings)
    with open(resumed, "a") as handle:
        handle.write('{"line": 3, "tok')  # a line cut by the kill
    again = build_tagging_transfer_set(ensemble, str(news), str(resumed), **settings)
    assert again["labelled_now"] == 36 - 12
    assert resumed.read_bytes() == whole.read_bytes()
    rows = [json.loads(line) for line in whole.read_text().splitlines()[1:]]
    assert sorted(r["line"] for r in rows) == list(range(1, 37))
    with pytest.raises(ConfigurationError, match="other settings"):
        build_tagging_transfer_set(ensemble, str(news), str(whole), ["t"], batch_size=5)


def test_the_command_resumes_after_a_sigkill_to_the_same_bytes(teacher, news, tmp_path):
    """The real `allennlp ldnet-tagging-transfer-set` process killed with SIGKILL while the
    teacher labels its 3rd batch (tests/training/sigkill.py), then the same command again: the
    two complete batches are kept and the file is the uninterrupted run's, byte for byte."""
    from tests.cli import run_allennlp
    from tests.training.sigkill import FORWARDS_OF_VARIABLE, KILL_AFTER_FORWARDS_VARIABLE

    def command(output, env=None, check=True):
        arguments = ["ldnet-tagging-transfer-set", teacher, "--input", str(news)]
        arguments += ["--output", str(output), "--batch-size", "8", "--threads", "1"]
        included = ["--include-package", "tests.training.sigkill"]
        return run_allennlp(arguments + included, env=env, check=check)

    killed = command(
        tmp_path / "killed.jsonl",
        env={KILL_AFTER_FORWARDS_VARIABLE: "2", FORWARDS_OF_VARIABLE: "TextFieldEmbedder"},
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    rows = (tmp_path / "killed.jsonl").read_text().splitlines()[1:]
    assert len(rows) == 2 * 8
    command(tmp_path / "killed.jsonl")
    command(tmp_path / "whole.jsonl")
    whole = (tmp_path / "whole.jsonl").read_bytes()
    assert (tmp_path / "killed.jsonl").read_bytes() == whole
    assert len(whole.decode().splitlines()) == 1 + 36


def test_the_reader_takes_nested_prefixes_and_names_a_bad_line(teacher, news, tmp_path):
    transfer = tmp_path / "transfer.jsonl"
    build_tagging_transfer_set(
        CrfEnsembleTeacher([teacher]), str(news), str(transfer), ["t"], batch_size=8
    )
    gold = load_archive(teacher).dataset_reader
    train = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
    counts = {}
    for size in (0, 5, None):
        reader = TaggingDistillationReader(gold, str(transfer), transfer_sentences=size)
        instances = list(reader.read(train))
        kinds = [int(i["transfer"].tensor.item()) for i in instances]
        counts[size] = sum(kinds)
        assert all(set(i.fields) == set(instances[0].fields) for i in instances)
    assert counts == {0: 0, 5: 5, None: 36}
    lines = transfer.read_text().splitlines()
    lines[3] = lines[3].replace('"silver": [', '"silver": ["O", ')
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigurationError, match=re.escape(f"{broken}, line 4")):
        list(TaggingDistillationReader(gold, str(broken)).read(train))


@pytest.mark.parametrize("loss", ["kl", "silver"])
def test_a_student_trained_on_the_fixtures_is_an_ordinary_tagger(
    teacher, news, tmp_path, loss, one_torch_thread
):
    from benchmarks.studies.pruning_phase2 import phase1_from_archive

    transfer = tmp_path / "transfer.jsonl"
    build_tagging_transfer_set(
        CrfEnsembleTeacher([teacher]), str(news), str(transfer), ["t"], batch_size=8
    )
    # the student's start: the teacher pruned to forward layer 1 and backward layer 0
    masked = masked_archive(teacher, tmp_path / "masked.tar.gz", [[0, 1, 0], [1, 0, 0]])
    prune_archive(str(masked), str(tmp_path / "pruned_teacher.tar.gz"))
    start = phase1_from_archive(tmp_path / "pruned_teacher.tar.gz", tmp_path / "start")
    config = tmp_path / "student.jsonnet"
    config.write_text(
        f"local distill = import '{CONFIGS_ROOT}/tagging/student/distill.libsonnet';\n"
        f"distill(import '{CONFIGS_ROOT}/tagging/ner_ldnet.jsonnet', '{start}', '{transfer}',"
        f" [1], [0], loss='{loss}', num_epochs=1)\n"
    )
    params = Params.from_file(str(config), ext_vars=data_ext_vars())
    assert "test_data_path" not in params.as_dict(quiet=True)
    train_model(params, str(tmp_path / "student"))
    archive_file = tmp_path / "student" / "model.tar.gz"
    archive = load_archive(str(archive_file))
    assert type(archive.model).__name__ == "LdnetCrfTagger"
    predictor = Predictor.from_archive(archive)
    tagged = predictor.predict_json({"sentence": "John Smith visited Paris ."})
    assert len(tagged["tags"]) == 5
    pruned = tmp_path / "pruned.tar.gz"
    prune_archive(str(archive_file), str(pruned), fp16=True, keep_all_layers=True)
    again = Predictor.from_archive(load_archive(str(pruned)))
    assert again.predict_json({"sentence": "John Smith visited Paris ."})["tags"] == tagged["tags"]
    export_tagger(str(pruned), str(tmp_path / "exported"))
    assert os.path.exists(tmp_path / "exported")


def test_the_distillation_reader_builds_the_gold_readers_instances(teacher, news, tmp_path):
    from allennlp.data import Token

    transfer = tmp_path / "transfer.jsonl"
    build_tagging_transfer_set(
        CrfEnsembleTeacher([teacher]), str(news), str(transfer), ["t"], batch_size=8
    )
    gold = load_archive(teacher).dataset_reader
    reader = TaggingDistillationReader(gold, str(transfer))
    words = [Token(w) for w in "John Smith visited Paris .".split()]
    instance = reader.text_to_instance(words)
    reader.apply_token_indexers(instance)
    expected = gold.text_to_instance(words)
    assert set(instance.fields) == set(expected.fields)
    assert [t.text for t in instance["tokens"].tokens] == [t.text for t in words]


def test_the_decoded_paths_as_class_probabilities_are_crf_taggers():
    from ldnet_allennlp.tagging.models.crf_tagger import _one_hot_paths

    logits = torch.zeros(2, 4, 3)
    paths = [[2, 0, 1], [1]]
    expected = logits * 0.0  # allennlp-models' CrfTagger: 1 at each decoded tag
    for i, path in enumerate(paths):
        for j, tag in enumerate(path):
            expected[i, j, tag] = 1
    assert torch.equal(_one_hot_paths(paths, 4, 3, logits.dtype), expected)
