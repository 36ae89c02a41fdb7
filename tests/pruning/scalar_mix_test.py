"""
Pruning a scalar-mix tagger (`dense_lm_scalar_mix`) as LD-Net taggers are pruned: the
`layer_pruning` callback trains its masks (`training_configs/elmo/ner_scalar_mix_prune.jsonnet`),
`ldnet-prune` cuts the removed layers out, and the pruned archive predicts exactly what the masked
model predicted, with fewer FLOPs; serving reports its layers.
"""

import json
from pathlib import Path

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.params import with_overrides
from allennlp.data import Token
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.pruning.cut_layers import prunable_embedders, prune_archive, write_archive
from ldnet_allennlp.serving.loaded_tagger import lm_layers_kept, load_tagger
from ldnet_allennlp.tagging.flops import flops_breakdown
from tests.cli import run_allennlp
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import lm_archive_ext_vars

NAME = "text_field_embedder.token_embedder_elmo"
CONFIG_BLOCK = "model.text_field_embedder.token_embedders.elmo"
DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
EXT_VARS = {
    "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
    "CONLL03_DEV_DATA_PATH": DEV,
    "CONLL03_TEST_DATA_PATH": DEV,
}
# ner_scalar_mix.jsonnet on the tiny fixture LMs (3 dense layers of 4 over 6-d words: the mix is
# 2 x 6 wide), so a smaller encoder: 50 (words) + 12 (mix) + 128 (chars)
FIXTURE_SIZE = {
    "model.type": "ldnet_crf_tagger",
    "model.encoder.input_size": 50 + 12 + 128,
    "model.encoder.hidden_size": 8,
    "data_loader.batch_size": 8,
}
SENTENCES = [
    "John Smith visited Paris .".split(),
    "Shares in Acme Corp rose 3 percent in Germany .".split(),
    ["Reuters"],
    ["Zürich", "🙂", "said", "it"],
]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def scalar_mix_params(config: str, ext_vars, **overrides) -> Params:
    params = Params.from_file(str(CONFIGS_ROOT / "elmo" / config), ext_vars=ext_vars)
    return Params(with_overrides(params.as_dict(quiet=True), {**FIXTURE_SIZE, **overrides}))


def train_phase1(directory: Path) -> Path:
    """ner_scalar_mix trained 2 epochs on the fixtures (masks all 1): its serialization dir."""
    ext_vars = {**EXT_VARS, **lm_archive_ext_vars()}
    train_model(
        scalar_mix_params("ner_scalar_mix.jsonnet", ext_vars, **{"trainer.num_epochs": 2}),
        str(directory / "run"),
    )
    return directory / "run"


@pytest.fixture(scope="module")
def phase1(tmp_path_factory):
    return train_phase1(tmp_path_factory.mktemp("scalar_mix_phase1"))


def masked_archive(phase1, path, mask, **config_changes):
    """The phase-1 tagger with its layer masks set to `mask` (and its config changed), saved."""
    archive = load_archive(str(phase1 / "model.tar.gz"))
    with torch.no_grad():
        archive.model.text_field_embedder.token_embedder_elmo.layer_mask.copy_(torch.tensor(mask))
    config = archive.config.as_dict(quiet=True)
    config = with_overrides(config, config_changes) if config_changes else config
    write_archive(config, archive.model, str(path))
    return path


def predictions(archive_path):
    predictor = Predictor.from_archive(load_archive(str(archive_path)))
    return predictor.predict_batch_json([{"tokens": s} for s in SENTENCES])


def logits(archive_path):
    archive = load_archive(str(archive_path))
    reader = archive.validation_dataset_reader
    instances = [reader.text_to_instance([Token(w) for w in s]) for s in SENTENCES]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return [output["logits"] for output in archive.model.eval().forward_on_instances(instances)]


@pytest.mark.parametrize(
    "mask, changes",
    [
        ([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], {}),
        # layer norm over the mixed layers; a layer one direction keeps and the other removes
        ([[0.0, 1.0, 1.0], [0.0, 1.0, 0.0]], {f"{CONFIG_BLOCK}.do_layer_norm": True}),
        # surviving soft masks stay as fixed multipliers; the forward LM loses every layer
        ([[0.0, 0.0, 0.0], [0.7, 0.0, 0.4]], {}),
    ],
)
def test_pruned_archive_predicts_exactly_what_the_masked_model_predicted(
    phase1, tmp_path, mask, changes
):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", mask, **changes)
    report = prune_archive(str(masked), str(tmp_path / "pruned.tar.gz"))

    kept = {
        direction: [layer for layer, z in enumerate(mask[row]) if z > 0]
        for row, direction in enumerate(["forward", "backward"])
    }
    assert report.kept_layers_before[NAME] == {"forward": [0, 1, 2], "backward": [0, 1, 2]}
    assert report.kept_layers_after[NAME] == kept
    assert report.parameters_after < report.parameters_before
    assert report.flops_per_token_after < report.flops_per_token_before

    pruned = load_archive(str(tmp_path / "pruned.tar.gz"))
    block = pruned.config.as_dict(quiet=True)["model"]["text_field_embedder"]["token_embedders"]
    assert block["elmo"]["forward_kept_layers"] == kept["forward"]
    assert block["elmo"]["backward_kept_layers"] == kept["backward"]
    embedder = pruned.model.text_field_embedder.token_embedder_elmo
    assert embedder.forward_lm.num_layers == len(kept["forward"])
    assert embedder.backward_lm.num_layers == len(kept["backward"])
    assert torch.equal(embedder.layer_mask.detach(), torch.tensor(mask))
    assert not embedder.layer_mask.requires_grad

    # same tags; logits equal up to float rounding (the LSTMs' sliced input columns)
    assert predictions(tmp_path / "pruned.tar.gz") == predictions(masked)
    for before, after in zip(logits(masked), logits(tmp_path / "pruned.tar.gz")):
        assert before.shape == after.shape
        assert torch.allclose(torch.as_tensor(before), torch.as_tensor(after), atol=1e-5)


def test_flops_and_serving_facts_of_the_pruned_scalar_mix_tagger(phase1, tmp_path):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    prune_archive(str(masked), str(tmp_path / "pruned.tar.gz"))
    before = load_archive(str(masked)).model
    after = load_archive(str(tmp_path / "pruned.tar.gz")).model
    unpruned, pruned = flops_breakdown(before), flops_breakdown(after)
    # the fixture LMs' layer l reads 6 + 4l: 4·4·(6 + 4l + 4) + 8·4 per layer and direction
    layer = {0: 160 + 32, 1: 224 + 32, 2: 288 + 32}
    assert unpruned["lm"] == 2 * sum(layer.values())
    # forward keeps layer 2, backward layer 0: each now reads only the words (6 inputs)
    assert pruned["lm"] == 2 * layer[0]
    # the mix: one multiply-add per feature of each layer half (the token layer + kept layers)
    assert unpruned["lm_projection"] == 2 * 4 * 6
    assert pruned["lm_projection"] == 2 * 2 * 6
    assert sum(pruned.values()) < sum(unpruned.values())
    assert [name for name, _ in prunable_embedders(after)] == [NAME]
    # what the server loads and reports (ldnet-serve's load_tagger)
    assert lm_layers_kept(before) == {"forward": [2], "backward": [0], "of": 3}
    predictor, facts = load_tagger(str(tmp_path / "pruned.tar.gz"))
    assert facts["lm_layers_kept"] == {"forward": [2], "backward": [0], "of": 3}
    assert facts["flops_per_token"] == sum(pruned.values())
    inputs = [{"tokens": tokens} for tokens in SENTENCES]
    assert predictor.predict_batch_json(inputs) == predictions(masked)


def test_layer_pruning_trains_the_masks_of_a_scalar_mix_config(phase1, tmp_path):
    """ner_scalar_mix_prune.jsonnet on the fixtures: the masks train, within the budget of 2."""
    ext_vars = {**EXT_VARS, **lm_archive_ext_vars(), "NER_SCALAR_MIX_PHASE1_DIR": str(phase1)}
    params = scalar_mix_params("ner_scalar_mix_prune.jsonnet", ext_vars)
    regexes = params.as_dict(quiet=True)["model"]["regularizer"]["regexes"]
    assert [regex for regex, _ in regexes] == ["scalar_parameters", "layer_mask"]
    penalty = dict(regexes[1][1], lambda0=2.0)  # fixture-sized, as tests/configs_test.py does
    overrides = {
        "trainer.num_epochs": 4,
        "data_loader.batch_size": 2,
        "model.regularizer": {"regexes": [regexes[0], ["layer_mask", penalty]]},
    }
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    run = tmp_path / "run"
    train_model(params, serialization_dir=str(run))

    epochs = sorted(run.glob("metrics_epoch_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    live = [json.loads(path.read_text())["training_live_layers"] for path in epochs]
    assert live == sorted(live, reverse=True) and live[-1] <= 2 < 6
    assert (run / "layer_masks.png").exists()
    model = load_archive(str(run / "model.tar.gz")).model
    mask = model.text_field_embedder.token_embedder_elmo.layer_mask.detach()
    assert ((mask >= 0) & (mask <= 1)).all()

    # ... and `allennlp ldnet-prune` cuts it down to what the masks kept
    process = run_allennlp(
        ["ldnet-prune", str(run / "model.tar.gz"), "-o", str(tmp_path / "pruned.tar.gz")]
        + ["--report-file", str(tmp_path / "report.json")]
    )
    assert f"{NAME} forward LM: layers [0, 1, 2] -> kept" in process.stdout
    kept = json.loads((tmp_path / "report.json").read_text())["kept_layers_after"][NAME]
    assert 1 <= len(kept["forward"]) + len(kept["backward"]) <= 2
    assert predictions(tmp_path / "pruned.tar.gz") == predictions(run / "model.tar.gz")


def test_pruned_by_reference_to_the_lm_archives(phase1, tmp_path):
    masked = masked_archive(phase1, tmp_path / "masked.tar.gz", [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    prune_archive(str(masked), str(tmp_path / "ref.tar.gz"), reference_lms=True)
    archive = load_archive(str(tmp_path / "ref.tar.gz"))
    block = archive.config.as_dict(quiet=True)["model"]["text_field_embedder"]["token_embedders"]
    assert block["elmo"]["store_lm_weights"] is False
    assert not [k for k in archive.model.state_dict() if "forward_lm." in k or "backward_lm." in k]
    assert predictions(tmp_path / "ref.tar.gz") == predictions(masked)
