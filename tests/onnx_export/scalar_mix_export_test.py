"""
`allennlp ldnet-export` of scalar-mix taggers (`dense_lm_scalar_mix`), pruned (`ldnet-prune`) or
not: the exported graph is the tagger's network, and the runtime tags as the AllenNLP predictor.
"""

import pytest
import torch

from allennlp.data import Batch, Token
from allennlp.models.archival import load_archive
from allennlp.nn.util import get_text_field_mask
from allennlp.predictors import Predictor

from ldnet_allennlp.onnx_export.emissions import EmissionNetwork
from ldnet_allennlp.onnx_export.exporter import export_tagger
from ldnet_allennlp.pruning.cut_layers import prune_archive
from ldnet_runtime import Tagger
from tests.pruning.scalar_mix_test import CONFIG_BLOCK, masked_archive, train_phase1

TOKENS = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["@@UNKNOWN@@", "<S>", "</S>", "北京", "🙂", "x"],
    ["Peter"],
    "John Smith visited Paris .".split(),
]
# (name, layer masks, config changes): each tagger pruned, except "unpruned"
TAGGERS = {
    "unpruned": (None, {}),
    "pruned": ([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], {}),
    "pruned_layer_norm": (
        [[0.0, 0.8, 1.0], [0.0, 0.0, 0.0]],
        {f"{CONFIG_BLOCK}.do_layer_norm": True},
    ),
}


@pytest.fixture(scope="module")
def taggers(tmp_path_factory, one_thread_session):
    """Name -> `{"archive": ..., "export": ...}`."""
    directory = tmp_path_factory.mktemp("scalar_mix_exports")
    phase1 = train_phase1(directory)
    made = {}
    for name, (mask, changes) in TAGGERS.items():
        archive = phase1 / "model.tar.gz"
        if mask is not None:
            masked = masked_archive(phase1, directory / f"{name}_masked.tar.gz", mask, **changes)
            archive = directory / f"{name}.tar.gz"
            prune_archive(str(masked), str(archive))
        export_tagger(str(archive), str(directory / f"{name}_export"))
        made[name] = {"archive": archive, "export": directory / f"{name}_export"}
    return made


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_the_runtime_tags_as_the_predictor(taggers, name):
    predictor = Predictor.from_archive(load_archive(str(taggers[name]["archive"])))
    tagger = Tagger(taggers[name]["export"], threads=1)
    inputs = [{"tokens": tokens} for tokens in TOKENS]
    assert tagger.predict_batch_json(inputs) == predictor.predict_batch_json(inputs)


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_the_emission_network_is_the_taggers_network(taggers, name):
    archive = load_archive(str(taggers[name]["archive"]))
    model, reader = archive.model.eval(), archive.validation_dataset_reader
    instances = []
    for tokens in TOKENS:
        instance = reader.text_to_instance([Token(t) for t in tokens])
        reader.apply_token_indexers(instance)
        instances.append(instance)
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    text = batch.as_tensor_dict()["tokens"]
    network = EmissionNetwork.from_tagger(model)
    assert network.input_kinds["elmo"] == "dense_lm_scalar_mix"
    with torch.no_grad():
        expected = model(tokens=text)["logits"]
        mask = get_text_field_mask(text)
        inputs = [next(iter(text[key].values())) for key in network.input_keys]
        actual = network(mask, *inputs)
    assert torch.allclose(actual[mask], expected[mask], atol=1e-5, rtol=0)
