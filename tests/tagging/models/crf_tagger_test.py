"""
`ldnet_crf_tagger` decodes with `BatchedViterbiCrf`; the fixtures' tagger archives predict and
evaluate exactly as with AllenNLP's per-sentence Viterbi (`ConditionalRandomField.viterbi_tags`).
"""

import json
from contextlib import contextmanager

import pytest

from allennlp.data import Batch
from allennlp.models.archival import load_archive
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.predictors import Predictor

from ldnet_allennlp.tagging.viterbi_crf import BatchedViterbiCrf
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"
DEV = FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"
INPUTS = json.loads((FIXTURE_ARCHIVES / "expected_predictions.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


@contextmanager
def allennlp_decoder(crf: BatchedViterbiCrf):
    """`crf` decodes with AllenNLP's `ConditionalRandomField.viterbi_tags` inside the block."""
    crf.__class__ = ConditionalRandomField
    try:
        yield
    finally:
        crf.__class__ = BatchedViterbiCrf


@pytest.mark.parametrize("name", ["ner_ldnet", "ner_ldnet_pruned"])
def test_archive_predicts_and_evaluates_as_with_allennlps_viterbi(name, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)  # the archives name their LM archives from here
    archive = load_archive(str(FIXTURE_ARCHIVES / f"{name}.tar.gz"))
    model = archive.model.eval()  # as `allennlp predict` / `evaluate` run it: no dropout
    assert type(model.crf) is BatchedViterbiCrf
    assert sorted(model.crf.state_dict()) == sorted(
        ConditionalRandomField(
            model.num_tags, include_start_end_transitions=model.include_start_end_transitions
        ).state_dict()
    )

    # One batch of every dev sentence (4 to 11 words) and the recorded inputs: tags and scores.
    reader = archive.validation_dataset_reader
    instances = list(reader.read(str(DEV)))
    inputs = INPUTS["archives"][name]["inputs"]
    assert len({len(instance["tokens"]) for instance in instances}) > 1
    dataset = Batch(instances)
    dataset.index_instances(model.vocab)
    output = model(**dataset.as_tensor_dict())
    batched = model.crf.viterbi_tags(output["logits"], output["mask"])
    batched_metrics = model.get_metrics(reset=True)
    predictor = Predictor.from_archive(archive, "ldnet_tagger")
    batched_predictions = predictor.predict_batch_json(inputs)
    batched_forward = model.forward_on_instances(instances)

    with allennlp_decoder(model.crf):
        model(**dataset.as_tensor_dict())  # the metrics as AllenNLP's decoder gives them
        assert model.get_metrics(reset=True) == batched_metrics
        assert batched == model.crf.viterbi_tags(output["logits"], output["mask"])
        assert batched_predictions == predictor.predict_batch_json(inputs)
        reference_forward = model.forward_on_instances(instances)
    assert [o["tags"] for o in batched_forward] == [o["tags"] for o in reference_forward]
    assert [len(tags) for tags, _ in batched] == [len(i["tokens"]) for i in instances]


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_forward_is_allennlp_models_crf_tagger_forward(training, monkeypatch):
    """Our `forward` (metrics on the CPU from the decoded lists) against allennlp-models'
    `CrfTagger.forward` on the same batches and dropout draws: logits, tags, loss, the
    gradients in training, and the metrics accumulated over several batches."""
    import torch
    from allennlp_models.tagging.models.crf_tagger import CrfTagger

    monkeypatch.chdir(PROJECT_ROOT)
    archive = load_archive(str(FIXTURE_ARCHIVES / "ner_ldnet.tar.gz"))
    model = archive.model.train(training)
    instances = list(archive.validation_dataset_reader.read(str(DEV)))
    batches = []
    for start, size in ((0, 3), (3, 1), (4, 4)):
        batch = Batch(instances[start : start + size])
        batch.index_instances(model.vocab)
        batches.append(batch.as_tensor_dict())

    def run(forward):
        results = []
        for seed, tensors in enumerate(batches):
            model.zero_grad()
            torch.manual_seed(seed)
            with torch.set_grad_enabled(training):
                output = forward(model, **tensors)
            grads = []
            if training:
                output["loss"].backward()
                grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
            results.append(
                (output["logits"].detach(), output["tags"], output["loss"].item(), grads)
            )
        return results, model.get_metrics(reset=True)

    ours, our_metrics = run(type(model).forward)
    theirs, their_metrics = run(CrfTagger.forward)
    assert our_metrics == their_metrics and our_metrics["accuracy"] > 0
    if training:
        assert len(ours[0][3]) > 10
    for (logits, tags, loss, grads), (logits2, tags2, loss2, grads2) in zip(ours, theirs):
        assert torch.equal(logits, logits2)
        assert tags == tags2
        assert loss == loss2
        assert len(grads) == len(grads2) and all(torch.equal(a, b) for a, b in zip(grads, grads2))
