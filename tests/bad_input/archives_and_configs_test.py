"""
Bad configs and bad archives: a mismatched dimension in every shipped training config, λ0 < 0 and
a budget of 0 in the pruning configs, LM archives of the wrong kind, truncated, of the wrong
direction or of the wrong vocabulary, in every config key that takes one.
"""

import json
from pathlib import Path
from typing import Dict

import pytest
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from ldnet_allennlp.tagging.metrics import DistributedSpanBasedF1Measure
from ldnet_allennlp.lm.token_embedders import LayerSelectionTokenEmbedder
from tests.configs_test import FIXTURE_EXT_VARS
from tests.conftest import CONFIGS_ROOT
from tests.distillation.conftest import DISTILLATION_FIXTURE_EXT_VARS

CRF_DIMS = "text field embedding dim must match encoder input dim, but got \\d+ and 7"
STUDENT_DIMS = "encoder input dim 7 does not match text_field_embedder output dim"
LM_DIMS = r"encoder.input_size \(7\) must equal the output dim of text_field_embedder"

# config -> (dimension key set to 7, the error). Every config under training_configs/ is either
# here or in NO_DIMENSION_KEY / CHECKED_AT_FIRST_BATCH (test_every_config_is_covered).
DIMENSION_ERRORS = {
    "lm/dense_lm_forward.jsonnet": ("model.encoder.input_size", LM_DIMS),
    "lm/dense_lm_backward.jsonnet": ("model.encoder.input_size", LM_DIMS),
    **{
        f"tagging/{name}.jsonnet": ("model.encoder.input_size", CRF_DIMS)
        for name in ["ner_vanilla", "chunk_vanilla", "ner_ldnet", "chunk_ldnet"]
        + ["ner_ldnet_prune", "chunk_ldnet_prune"]
        + ["ner_vanilla_lm_init", "ner_ldnet_lm_init", "chunk_ldnet_lm_init"]
        + ["ner_vanilla_glove", "ner_ldnet_glove", "chunk_vanilla_glove", "chunk_ldnet_glove"]
        + ["ner_ldnet_glove_prune", "chunk_ldnet_glove_prune"]
        + ["ner_ldnet_glove_prune_sgd_masks", "chunk_ldnet_glove_prune_sgd_masks"]
        # the recipe search's configs
        + [f"recipe/ner_vanilla_glove_{v}" for v in ["min2", "nowords", "sgd", "char_lstm"]]
        + ["recipe/ner_ldnet_glove_sgd", "recipe/chunk_ldnet_glove_sgd"]
        + ["recipe/chunk_vanilla_glove_sgd", "recipe/ner_ldnet_glove_sgd_prune"]
        + [f"recipe/{task}_ldnet_glove_sgd_prune_sticky" for task in ["ner", "chunk"]]
        + [f"recipe/{task}_ldnet_glove_sgd_prune_sticky_lr" for task in ["ner", "chunk"]]
        + ["recipe/chunk_ldnet_glove_sgd_prune_sticky_lr_budget4"]
        + ["recipe/chunk_ldnet_glove_sgd_prune_l1"]
    },
    "elmo/ner_scalar_mix.jsonnet": ("model.encoder.input_size", CRF_DIMS),
    "elmo/ner_scalar_mix_prune.jsonnet": ("model.encoder.input_size", CRF_DIMS),
    "elmo/ner_ldnet_shape_scalar_mix.jsonnet": ("model.encoder.input_size", CRF_DIMS),
    "elmo/ner_scalar_mix_glove_sgd.jsonnet": ("model.encoder.input_size", CRF_DIMS),
    "elmo/ner_scalar_mix_glove_sgd_prune.jsonnet": ("model.encoder.input_size", CRF_DIMS),
    **{
        f"distillation/{task}_{kind}.jsonnet": ("model.encoder.input_size", STUDENT_DIMS)
        for task in ["sst2", "sick"]
        for kind in ["bilstm", "distilled", "distilled_aug"]
        + ["bilstm_glove", "distilled_glove", "distilled_aug_glove"]
    },
    "distillation/sst2_distilled_online.jsonnet": ("model.encoder.input_size", STUDENT_DIMS),
}
NO_DIMENSION_KEY = {
    # the whole model comes from the LM archive (its kind is checked below)
    "tagging/lm_finetune_forward.jsonnet",
    "tagging/lm_finetune_backward.jsonnet",
    # bert_pooler and the classifier take their sizes from the pretrained transformer
    "distillation/sst2_teacher.jsonnet",
    "distillation/sick_teacher.jsonnet",
    # the pruned students: recipe/{ner,chunk}_ldnet_glove_sgd (above) with the shipped pruned
    # tagger's layers (which the 3-layer fixture LMs lack) and weights; rendered by
    # tests/configs_test.py, their distill.libsonnet trained by
    # tests/distillation/tagging/pruned_student_test.py
    "tagging/student/ner_pruned_student.jsonnet",
    "tagging/student/chunk_pruned_student.jsonnet",
}
# AllenNLP's basic_classifier does not compare its encoder's input size with the embedder's, and
# torch's LSTM ran on garbage (ldnet_allennlp/patches/rnn_wrapper_forward.py): checked at the
# first batch
CHECKED_AT_FIRST_BATCH = {"elmo/sst2_scalar_mix.jsonnet": "model.seq2vec_encoder.input_size"}


@pytest.fixture(scope="module")
def ext_vars(data_ext_vars, ldnet_run, tmp_path_factory) -> Dict[str, str]:
    # the *_lm_init configs' word vectors: one 128-d vector, for a word every vocabulary has
    vectors = tmp_path_factory.mktemp("word_vectors") / "vectors.txt"
    vectors.write_text("@@UNKNOWN@@ " + " ".join(["0.1"] * 128) + "\n")
    return {
        "LM_WORD_VECTORS": str(vectors),
        **FIXTURE_EXT_VARS,
        **DISTILLATION_FIXTURE_EXT_VARS,
        **data_ext_vars,
        "NER_LDNET_PHASE1_DIR": str(ldnet_run),
        "CHUNK_LDNET_PHASE1_DIR": str(ldnet_run),
        # the dimension error comes before the phase-1 weights are read (only its vocabulary is)
        "NER_LDNET_GLOVE_PHASE1_DIR": str(ldnet_run),
        "CHUNK_LDNET_GLOVE_PHASE1_DIR": str(ldnet_run),
        "NER_SCALAR_MIX_PHASE1_DIR": str(ldnet_run),
        "NER_SCALAR_MIX_GLOVE_PHASE1_DIR": str(ldnet_run),
        "LM_FINETUNE_TRAIN_PATH": FIXTURE_EXT_VARS["LM_TRAIN_DATA_PATH"],
        "LM_FINETUNE_DEV_PATH": FIXTURE_EXT_VARS["LM_VALIDATION_DATA_PATH"],
        # the online student loads its teacher at its first batch, never at construction
        "SST2_TEACHER_ARCHIVE": str(tmp_path_factory.mktemp("no_teacher") / "model.tar.gz"),
    }


def config_params(config: str, ext_vars: Dict[str, str], **overrides) -> Params:
    return Params.from_file(
        str(CONFIGS_ROOT / config), ext_vars=ext_vars, params_overrides=json.dumps(overrides)
    )


def build_model(config: str, ext_vars: Dict[str, str], **overrides) -> Model:
    params = config_params(config, ext_vars, **overrides)
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["O", "U-PER", "B-NP", "L-NP"], "labels")
    return Model.from_params(vocab=vocab, params=params.pop("model"))


def test_every_config_is_covered():
    configs = {str(p.relative_to(CONFIGS_ROOT)) for p in CONFIGS_ROOT.rglob("*.jsonnet")}
    covered = set(DIMENSION_ERRORS) | NO_DIMENSION_KEY | set(CHECKED_AT_FIRST_BATCH)
    assert configs == covered


@pytest.mark.parametrize("config", sorted(DIMENSION_ERRORS))
def test_mismatched_dimension_is_a_configuration_error(config, ext_vars):
    key, message = DIMENSION_ERRORS[config]
    with pytest.raises(ConfigurationError, match=message):
        build_model(config, ext_vars, **{key: 7})


def test_basic_classifier_dimension_mismatch_fails_on_the_first_batch(ext_vars):
    config = "elmo/sst2_scalar_mix.jsonnet"
    params = config_params(config, ext_vars, **{CHECKED_AT_FIRST_BATCH[config]: 7})
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params.pop("train_data_path")))[:2]
    vocab = Vocabulary.from_instances(instances)
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    batch = Batch(instances)
    batch.index_instances(vocab)
    with pytest.raises(
        ConfigurationError, match=r"LstmSeq2VecEncoder \(LSTM\): its input_size is 7, "
    ):
        model(**batch.as_tensor_dict())


@pytest.mark.parametrize(
    "config", ["tagging/ner_ldnet_prune.jsonnet", "tagging/chunk_ldnet_prune.jsonnet"]
)
@pytest.mark.parametrize(
    "lambda0, budget, message",
    [(-0.05, 2, "lambda0 must be >= 0, got -0.05"), (0.05, 0, "budget must be >= 1, got 0")],
)
def test_pruning_config_lambda0_below_zero_and_budget_zero(
    config, lambda0, budget, message, ext_vars
):
    regularizer = {"type": "layer_selection", "lambda0": lambda0, "budget": budget}
    with pytest.raises(ConfigurationError, match=f"layer_selection: {message}"):
        build_model(
            config, ext_vars, **{"model.regularizer": {"regexes": [["layer_mask", regularizer]]}}
        )


@pytest.fixture(scope="module")
def bad_archives(ldnet_run, lm_archives, tmp_path_factory) -> Dict[str, str]:
    directory = tmp_path_factory.mktemp("bad_archives")
    truncated = directory / "truncated.tar.gz"
    truncated.write_bytes(Path(lm_archives["forward"]).read_bytes()[:1500])
    text = directory / "notes.tar.gz"
    text.write_text("not an archive\n")
    return {
        "tagger": str(ldnet_run / "model.tar.gz"),
        "truncated": str(truncated),
        "text": str(text),
        "backward LM": lm_archives["backward"],
    }


NOT_A_DENSE_LM = "holds a LdnetCrfTagger, not a dense_language_model"
NOT_AN_ARCHIVE = "could not be loaded as an AllenNLP model archive"
# (config, the archive given as FORWARD_LM_ARCHIVE, the error)
LDNET, MIX = "tagging/ner_ldnet.jsonnet", "elmo/ner_scalar_mix.jsonnet"
FINETUNE = "tagging/lm_finetune_forward.jsonnet"
WRONG_LM_ARCHIVES = [
    (LDNET, "tagger", rf"forward_lm_archive \(.*\) {NOT_A_DENSE_LM}"),
    (LDNET, "truncated", rf"forward_lm_archive \(.*truncated.*\) {NOT_AN_ARCHIVE}"),
    (LDNET, "text", rf"forward_lm_archive \(.*notes.tar.gz\) {NOT_AN_ARCHIVE}"),
    (LDNET, "backward LM", r"forward_lm_archive \(.*\) holds a 'backward' language model"),
    (MIX, "tagger", rf"forward_lm_archive \(.*\) {NOT_A_DENSE_LM}"),
    (MIX, "truncated", rf"forward_lm_archive \(.*truncated.*\) {NOT_AN_ARCHIVE}"),
    (MIX, "text", rf"forward_lm_archive \(.*notes.tar.gz\) {NOT_AN_ARCHIVE}"),
    (MIX, "backward LM", r"forward_lm_archive \(.*\) holds a 'backward' language model"),
    (FINETUNE, "tagger", r"model.archive_file \(.*\) holds a LdnetCrf"),
    (FINETUNE, "backward LM", r"holds a 'backward' language model, but"),
    (FINETUNE, "text", rf"model.archive_file \(.*\) {NOT_AN_ARCHIVE}"),
]  # fmt: skip


@pytest.mark.parametrize("config, archive, message", WRONG_LM_ARCHIVES)
def test_lm_archive_of_the_wrong_kind_names_the_key(
    config, archive, message, ext_vars, bad_archives
):
    variables = dict(ext_vars, FORWARD_LM_ARCHIVE=bad_archives[archive])
    with pytest.raises(ConfigurationError, match=message):
        build_model(config, variables)


def test_lm_finetune_with_a_tagger_archive_through_train(ext_vars, bad_archives, tmp_path):
    """The whole `allennlp train` path (vocabulary from the archive first, then the model)."""
    variables = dict(ext_vars, FORWARD_LM_ARCHIVE=bad_archives["tagger"])
    params = config_params("tagging/lm_finetune_forward.jsonnet", variables)
    with pytest.raises(
        ConfigurationError, match="holds a LdnetCrfTagger, not a dense_language_model"
    ):
        train_model(params, str(tmp_path / "run"))


def test_tagger_vocabulary_that_does_not_match_its_lm_archives(ldnet_run, lm_archives):
    """
    A tagger archive whose LM archive paths now hold other LMs (another vocabulary): here the
    tagger's copy of the LM vocabulary has one word more than the LMs at those paths.
    """
    vocab = load_archive(str(ldnet_run / "model.tar.gz")).model.vocab
    vocab.add_token_to_namespace("a-word-the-lms-never-saw", "lm_tokens")
    with pytest.raises(ConfigurationError, match="does not match the LM archives' vocabulary"):
        LayerSelectionTokenEmbedder(lm_archives["forward"], lm_archives["backward"], vocab=vocab)


def test_span_f1_with_an_unknown_label_encoding():
    with pytest.raises(ConfigurationError, match="Unknown label encoding"):
        DistributedSpanBasedF1Measure(Vocabulary(), label_encoding="IOBES")
