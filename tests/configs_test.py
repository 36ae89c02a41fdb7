"""
Every shipped training config constructs and trains on the fixtures (the allennlp-models
convention), so no config under `training_configs/` can rot.

Data paths come from environment variables (`std.extVar`). `FIXTURE_EXT_VARS` points each of them
at a fixture; `EXT_VAR_BUILDERS` builds the ones that need work first (e.g. LM archives trained on
the fixture text), once per session. A config that reads a variable missing from both fails with
a message naming it.
"""

import json
from pathlib import Path
from typing import Callable, Dict, List

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.params import with_overrides
from allennlp.models.archival import load_archive
from allennlp.training.util import HasBeenWarned

from ldnet_allennlp.lm import write_word_vector_file
from benchmarks.studies.gpu_paths import FIXTURE_DATA, LM_OVERRIDES
from tests.conftest import CONFIGS_ROOT, PROJECT_ROOT
from tests.lm.lm_archives import build_lm_archive_ext_vars

FIXTURE_EXT_VARS: Dict[str, str] = dict(FIXTURE_DATA)


_PHASE1_DIRS: Dict[str, str] = {}


def build_ldnet_phase1(directory: Path) -> Dict[str, str]:
    """
    `<TASK>_LDNET_PHASE1_DIR` and `<TASK>_LDNET_GLOVE_PHASE1_DIR` for the pruning configs:
    ner_ldnet, chunk_ldnet and their GloVe variants trained 1 epoch on fixtures, built once per
    test session (later callers get the first build; the taggers are only read).
    """
    if not _PHASE1_DIRS:
        _PHASE1_DIRS.update(_train_ldnet_phase1(directory))
    return dict(_PHASE1_DIRS)


def _train_ldnet_phase1(directory: Path) -> Dict[str, str]:
    variables = {**FIXTURE_EXT_VARS, **build_lm_archive_ext_vars(directory)}
    phase1_dirs = {}
    for task in ("ner", "chunk"):
        for variant, variable in (("", "LDNET"), ("_glove", "LDNET_GLOVE")):
            name = f"{task}_ldnet{variant}"
            config = CONFIGS_ROOT / "tagging" / f"{name}.jsonnet"
            params = Params.from_file(str(config), ext_vars=variables)
            params = Params(with_overrides(params.as_dict(quiet=True), {"trainer.num_epochs": 1}))
            train_model(params, serialization_dir=str(directory / name))
            phase1_dirs[f"{task.upper()}_{variable}_PHASE1_DIR"] = str(directory / name)
    return phase1_dirs


def build_scalar_mix_phase1(directory: Path) -> Dict[str, str]:
    """
    `NER_SCALAR_MIX_PHASE1_DIR` (elmo/ner_scalar_mix_prune): elmo/ner_scalar_mix trained 1 epoch
    on fixtures over the same LMs, as an `ldnet_crf_tagger` (the type its pruning config sets).
    """
    variables = {**FIXTURE_EXT_VARS, **build_lm_archive_ext_vars(directory)}
    config = CONFIGS_ROOT / "elmo" / "ner_scalar_mix.jsonnet"
    params = Params.from_file(str(config), ext_vars=variables)
    overrides = {"trainer.num_epochs": 1, "model.type": "ldnet_crf_tagger"}
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    train_model(params, serialization_dir=str(directory / "ner_scalar_mix"))
    # and NER_SCALAR_MIX_GLOVE_PHASE1_DIR (elmo/ner_scalar_mix_glove_sgd_prune): the final
    # recipe's scalar-mix tagger, 1 epoch
    config = CONFIGS_ROOT / "elmo" / "ner_scalar_mix_glove_sgd.jsonnet"
    params = Params.from_file(str(config), ext_vars=variables)
    params = Params(with_overrides(params.as_dict(quiet=True), {"trainer.num_epochs": 1}))
    train_model(params, serialization_dir=str(directory / "ner_scalar_mix_glove_sgd"))
    return {
        "NER_SCALAR_MIX_PHASE1_DIR": str(directory / "ner_scalar_mix"),
        "NER_SCALAR_MIX_GLOVE_PHASE1_DIR": str(directory / "ner_scalar_mix_glove_sgd"),
    }


def build_lm_word_vectors(directory: Path) -> Dict[str, str]:
    """`LM_WORD_VECTORS` (ner_ldnet_lm_init): the fixture forward LM's word embeddings."""
    vectors = directory / "lm_word_vectors.txt"
    forward_lm = build_lm_archive_ext_vars(directory)["FORWARD_LM_ARCHIVE"]
    write_word_vector_file(forward_lm, str(vectors), lowercase=True)
    return {"LM_WORD_VECTORS": str(vectors)}


# Each builder gets a scratch directory and returns {variable: value}.
EXT_VAR_BUILDERS: List[Callable[[Path], Dict[str, str]]] = [
    build_lm_archive_ext_vars,  # FORWARD_LM_ARCHIVE, BACKWARD_LM_ARCHIVE (fixture dense LMs)
    build_ldnet_phase1,  # <TASK>_LDNET[_GLOVE]_PHASE1_DIR (same LMs)
    build_lm_word_vectors,  # LM_WORD_VECTORS (same forward LM)
    build_scalar_mix_phase1,  # NER_SCALAR_MIX[_GLOVE]_PHASE1_DIR (same LMs)
]

# training_configs/distillation/ is trained on fixtures (with a tiny BERT teacher) by
# tests/distillation/classification/configs_test.py, which knows its transfer-set variables. The
# pruned students (tagging/student/) keep LM layers the 3-layer fixture LMs lack: their shared
# distill.libsonnet is trained on fixtures by tests/distillation/tagging/pruned_student_test.py,
# and the two configs are rendered below.
STUDENT_CONFIGS = sorted((CONFIGS_ROOT / "tagging" / "student").glob("*.jsonnet"))
ALL_CONFIGS = sorted(
    path
    for path in CONFIGS_ROOT.rglob("*.jsonnet")
    if path.relative_to(CONFIGS_ROOT).parts[0] != "distillation" and path not in STUDENT_CONFIGS
)

# The real LM configs' adaptive-softmax cut-offs and vocabulary limits exceed the fixture text.
FIXTURE_OVERRIDES = {"lm": LM_OVERRIDES}


def config_id(path: Path) -> str:
    return str(path.relative_to(CONFIGS_ROOT))


@pytest.fixture(scope="session")
def ext_vars(tmp_path_factory) -> Dict[str, str]:
    variables = dict(FIXTURE_EXT_VARS)
    for builder in EXT_VAR_BUILDERS:
        variables.update(builder(tmp_path_factory.mktemp(builder.__name__)))
    return variables


def load_config(config: Path, ext_vars: Dict[str, str]) -> Params:
    try:
        return Params.from_file(str(config), ext_vars=ext_vars)
    except RuntimeError as error:  # jsonnet: "undefined external variable: X"
        raise AssertionError(
            f"{config_id(config)} reads an external variable that tests/configs_test.py does not "
            f"point at a fixture: {error}"
        )


def user_warnings(serialization_dir: Path) -> List[str]:
    """
    The WARNING and ERROR lines of the run's log (`out.log`, what `allennlp train` prints), which
    a user of the config would have to read: none is expected.
    """
    log = (serialization_dir / "out.log").read_text()
    return [
        line
        for line in log.splitlines()
        if (" - WARNING - " in line or " - ERROR - " in line)
        and not any(message in line for message in ACTIONABLE_WARNINGS)
    ]


# Warnings that tell the user what to do, expected after one fixture epoch.
ACTIONABLE_WARNINGS = (
    # the pruning configs: the masks had no time to get within the budget
    "layer_pruning: training ended with",
)


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=config_id)
def test_config_trains_on_fixtures(config: Path, ext_vars, tmp_path):
    params = load_config(config, ext_vars)
    overrides = {"trainer.num_epochs": 1}
    overrides.update(FIXTURE_OVERRIDES.get(config.relative_to(CONFIGS_ROOT).parts[0], {}))
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    HasBeenWarned.tqdm_ignores_underscores = False  # as in a fresh `allennlp train` process
    train_model(params, serialization_dir=str(tmp_path / "run"))
    assert (tmp_path / "run" / "model.tar.gz").exists()
    assert user_warnings(tmp_path / "run") == []


@pytest.mark.parametrize(
    "config", ["elmo/ner_scalar_mix.jsonnet", "elmo/ner_scalar_mix_prune.jsonnet"]
)
def test_scalar_mix_fine_tuning_its_lms_trains_on_fixtures(config: str, ext_vars, tmp_path):
    """
    The scalar mix with `requires_grad` LMs, and its pruning: autograd goes back through the
    LMs' LSTMs (which the suite's cuDNN rule checks, `tests/cudnn_rule.py`), and the LM weights
    the tagger ends with are no longer the LM archive's.
    """
    params = load_config(CONFIGS_ROOT / config, ext_vars)
    overrides = {
        "trainer.num_epochs": 1,
        "model.text_field_embedder.token_embedders.elmo.requires_grad": True,
    }
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    train_model(params, serialization_dir=str(tmp_path / "run"))
    tagger = torch.load(tmp_path / "run" / "best.th")
    lm = load_archive(ext_vars["FORWARD_LM_ARCHIVE"]).model.state_dict()
    tuned = {name: weights for name, weights in tagger.items() if "._elmo_lstm.forward_lm." in name}
    assert tuned
    changed = [
        name
        for name, weights in tuned.items()
        if not torch.equal(weights, lm[name.split("._elmo_lstm.forward_lm.")[1]])
    ]
    assert any("weight_hh" in name for name in changed), changed


@pytest.mark.parametrize(
    "config",
    [
        "recipe/ner_ldnet_glove_sgd_prune_sticky",
        "recipe/chunk_ldnet_glove_sgd_prune_sticky",
        "recipe/chunk_ldnet_glove_sgd_prune_l1",
    ],
)
def test_sticky_phase2_ends_within_budget_on_fixtures(config: str, ext_vars, tmp_path):
    """
    Phase 2 with `sticky_zeros` from a fixture phase-1 tagger: the live layers never rise from
    one epoch to the next, and the run ends within the budget of 2, with a best checkpoint that
    is within it (what `ldnet-prune` exports).
    """
    params = load_config(CONFIGS_ROOT / "tagging" / f"{config}.jsonnet", ext_vars)
    # fixture-sized: more optimizer steps per epoch (batch 2) and a penalty to match (the
    # config's other penalty settings, e.g. reg1_scale, kept)
    penalty = dict(params.as_dict(quiet=True)["model"]["regularizer"]["regexes"][0][1])
    assert penalty["budget"] == 2
    penalty["lambda0"] = 2.0
    overrides = {
        "trainer.num_epochs": 4,
        "data_loader.batch_size": 2,
        "model.regularizer": {"regexes": [["layer_mask", penalty]]},
    }
    params = Params(with_overrides(params.as_dict(quiet=True), overrides))
    train_model(params, serialization_dir=str(tmp_path / "run"))
    epochs = sorted(
        (tmp_path / "run").glob("metrics_epoch_*.json"), key=lambda p: int(p.stem.split("_")[-1])
    )
    live = [json.loads(path.read_text())["training_live_layers"] for path in epochs]
    assert live == sorted(live, reverse=True)
    assert live[-1] <= 2
    final = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert final["best_validation_f1-measure-overall-within-budget"] >= 0


def test_scalar_mix_pruning_config_parses(ext_vars):
    """
    elmo/ner_scalar_mix_prune: ner_scalar_mix pruned as the LD-Net recipe prunes (budget 2,
    sticky zeros, masks with Adam at lr 0.2), its L2 on the mixing weights kept.
    """
    config = CONFIGS_ROOT / "elmo" / "ner_scalar_mix_prune.jsonnet"
    phase1 = load_config(CONFIGS_ROOT / "elmo" / "ner_scalar_mix.jsonnet", ext_vars).as_dict()
    params = load_config(config, ext_vars).as_dict(quiet=True)
    model = params["model"]
    assert model["type"] == "ldnet_crf_tagger"
    elmo = model["text_field_embedder"]["token_embedders"]["elmo"]
    assert elmo["type"] == "dense_lm_scalar_mix" and elmo["trainable_layer_mask"] is True
    assert {k: v for k, v in elmo.items() if k != "trainable_layer_mask"} == (
        phase1["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    )
    regexes = model["regularizer"]["regexes"]
    assert regexes[0] == ["scalar_parameters", {"type": "l2", "alpha": 0.1}]
    assert regexes[1] == [
        "layer_mask",
        {"type": "layer_selection", "lambda0": 0.05 * 64, "budget": 2},
    ]
    phase1_dir = ext_vars["NER_SCALAR_MIX_PHASE1_DIR"]
    assert params["vocabulary"] == {"type": "from_files", "directory": f"{phase1_dir}/vocabulary"}
    (initializer,) = model["initializer"]["regexes"]
    assert initializer[1]["weights_file_path"] == f"{phase1_dir}/best.th"
    trainer = params["trainer"]
    assert trainer["validation_metric"] == "+f1-measure-overall-within-budget"
    assert trainer["optimizer"]["type"] == "adam" and trainer["optimizer"]["lr"] == 0.001
    assert trainer["optimizer"]["parameter_groups"] == [[["layer_mask"], {"lr": 0.2}]]
    assert trainer["callbacks"][-1] == {
        "type": "layer_pruning",
        "start_epoch": 0,
        "sticky_zeros": True,
    }


def test_final_recipe_scalar_mix_prunes_as_the_shipped_ner_pruned_was(ext_vars):
    """
    elmo/ner_scalar_mix_glove_sgd_prune is the LD-Net recipe's phase 2
    (recipe/ner_ldnet_glove_sgd_prune_sticky_lr) with the scalar-mix embedder: the same trainer,
    penalty and tagger learning rate, only the `lm` embedder block (and the mix's L2) differ.
    """
    mix = load_config(CONFIGS_ROOT / "elmo" / "ner_scalar_mix_glove_sgd_prune.jsonnet", ext_vars)
    ldnet_config = (
        CONFIGS_ROOT / "tagging" / "recipe" / "ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet"
    )
    ldnet = load_config(ldnet_config, ext_vars).as_dict(quiet=True)
    mix = mix.as_dict(quiet=True)
    embedder = mix["model"]["text_field_embedder"]["token_embedders"]["lm"]
    assert embedder["type"] == "dense_lm_scalar_mix" and embedder["trainable_layer_mask"] is True
    assert (
        mix["model"]["regularizer"]["regexes"]
        == [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]
        + ldnet["model"]["regularizer"]["regexes"]
    )
    assert mix["trainer"]["optimizer"] == ldnet["trainer"]["optimizer"]
    assert mix["trainer"]["optimizer"]["optimizers"]["default"]["lr"] == 0.006
    assert mix["trainer"]["callbacks"] == ldnet["trainer"]["callbacks"][:2] + [
        "lm_feature_cache",
        ldnet["trainer"]["callbacks"][-1],
    ]
    phase1 = ext_vars["NER_SCALAR_MIX_GLOVE_PHASE1_DIR"]
    assert mix["vocabulary"] == {"type": "from_files", "directory": f"{phase1}/vocabulary"}
    for key in ("data_loader", "dataset_reader", "datasets_for_vocab_creation"):
        assert mix[key] == ldnet[key], key


def test_no_training_config_names_a_test_file():
    """Test files are read by `allennlp evaluate` once, at the end: no config in
    training_configs/ sets `test_data_path` or reads a `*_TEST_DATA_PATH` variable."""
    offenders = []
    for path in sorted(CONFIGS_ROOT.rglob("*.*sonnet")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            code = line.split("//", 1)[0]
            if "test_data_path" in code or "TEST_DATA_PATH" in code or "eng.testb" in code:
                offenders.append(f"{path.relative_to(CONFIGS_ROOT)}:{number}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("config", STUDENT_CONFIGS, ids=config_id)
def test_student_configs_render_as_distilled_pruned_taggers(config: Path):
    variables = {
        **FIXTURE_EXT_VARS,
        "FORWARD_LM_ARCHIVE": "pretrained:lm_forward",
        "BACKWARD_LM_ARCHIVE": "pretrained:lm_backward",
        "STUDENT_START_DIR": "runs/start",
        "TRANSFER_SET_PATH": "runs/transfer.jsonl",
        "DISTILLATION_LOSS": "kl",
        "DISTILLATION_WEIGHT": "0.5",
        "TRANSFER_SENTENCES": "1000",
        "STUDENT_EPOCHS": "2",
        "STUDENT_LR": "0.006",
    }
    rendered = load_config(config, variables).as_dict(quiet=True)
    assert rendered["dataset_reader"]["type"] == "ldnet_tagging_distillation"
    assert rendered["dataset_reader"]["transfer_sentences"] == 1000
    assert rendered["validation_dataset_reader"]["type"].startswith("ldnet_conll")
    assert rendered["vocabulary"] == {"type": "from_files", "directory": "runs/start/vocabulary"}
    model = rendered["model"]
    assert (model["distillation_loss"], model["distillation_weight"]) == ("kl", 0.5)
    lm = model["text_field_embedder"]["token_embedders"]["lm"]
    shipped = "ner_pruned" if config.name.startswith("ner") else "chunk_pruned"
    kept = json.loads((PROJECT_ROOT / "pretrained" / "MANIFEST.json").read_text())[shipped]
    kept = kept["kept_layers"]
    assert (lm["forward_kept_layers"], lm["backward_kept_layers"]) == (
        kept["forward"],
        kept["backward"],
    )
    assert rendered["trainer"]["num_epochs"] == 2
    assert rendered["trainer"]["optimizer"]["lr"] == 0.006
