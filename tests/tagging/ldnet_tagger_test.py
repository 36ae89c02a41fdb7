"""
The LD-Net NER tagger (`training_configs/tagging/ner_ldnet.jsonnet`) on the fixtures, with tiny
fixture LMs: train / save / load, batch vs single predictions, the self-contained archive through
the real `allennlp predict` / `evaluate` command line, and span F1 = conlleval F1.
"""

import json
import os
import shutil

import pytest

from allennlp.commands.evaluate import evaluate_from_archive
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.testing import ModelTestCase
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from tests.tagging.conlleval import conlleval_f1
from tests.cli import run_allennlp
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import fixture_lm_archives

CONFIG = CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet"
TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")


def data_env(archives):
    return {
        "CONLL03_TRAIN_DATA_PATH": TRAIN,
        "CONLL03_DEV_DATA_PATH": DEV,
        "CONLL03_TEST_DATA_PATH": DEV,
        "FORWARD_LM_ARCHIVE": archives["forward"],
        "BACKWARD_LM_ARCHIVE": archives["backward"],
    }


class TestLdnetTagger(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self._saved_env = dict(os.environ)
        os.environ.update(data_env(fixture_lm_archives()))
        self.set_up_model(CONFIG, DEV)

    def teardown_method(self):
        os.environ.clear()
        os.environ.update(self._saved_env)
        super().teardown_method()

    def test_trains_saves_loads_and_batch_equals_single(self):
        self.ensure_model_can_train_save_and_load(
            self.param_file, overrides=json.dumps({"trainer.num_epochs": 2})
        )
        self.ensure_batch_predictions_are_consistent()


@pytest.fixture(scope="module")
def trained_archive(tmp_path_factory):
    """ner_ldnet trained on the fixtures from *copies* of the LM archives, then deleted."""
    directory = tmp_path_factory.mktemp("ner_ldnet")
    archives = {}
    for direction, path in fixture_lm_archives().items():
        archives[direction] = str(directory / f"lm_{direction}.tar.gz")
        shutil.copy(path, archives[direction])
    params = Params.from_file(str(CONFIG), ext_vars=data_env(archives))
    params["trainer"]["num_epochs"] = 8
    params["trainer"]["patience"] = None
    train_model(params, serialization_dir=str(directory / "run"))
    for path in archives.values():
        os.remove(path)
    return str(directory / "run" / "model.tar.gz")


def test_archive_loads_without_the_lm_archives(trained_archive):
    model = load_archive(trained_archive).model
    embedder = model.text_field_embedder._token_embedders["lm"]
    assert embedder.forward_lm.num_layers == 3
    lm_parameters = {n: p for n, p in model.named_parameters() if "ward_lm." in n}
    assert lm_parameters and not any(p.requires_grad for p in lm_parameters.values())
    # load_archive's extend_embedder_vocab did not grow the LM's word embedding
    lm_embedding = next(p for n, p in lm_parameters.items() if "forward_lm" in n and "weight" in n)
    assert lm_embedding.size(0) == model.vocab.get_vocab_size("lm_tokens")


def test_predict_cli_raw_text_tokens_and_bad_sentences(trained_archive, tmp_path):
    long_sentence = ["Reuters"] + ["said"] * 1998 + ["."]
    lines = [
        {"sentence": "John Smith visited Paris on Monday."},
        {"tokens": ["Reuters", "said", "."]},
        {"sentence": ""},
        {"tokens": []},
        {"tokens": long_sentence},
        # characters outside the LM (and tagger) vocabulary
        {"sentence": "Zürich's 日本 office 🙂 said naïve things."},
    ]
    inputs = tmp_path / "input.jsonl"
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = tmp_path / "predictions.jsonl"
    run_allennlp(
        ["predict", trained_archive, str(inputs), "--output-file", str(output), "--silent"]
        + ["--include-package", "ldnet_allennlp"]
    )
    predictions = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(predictions) == len(lines)
    assert predictions[0]["tokens"] == ["John", "Smith", "visited", "Paris", "on", "Monday", "."]
    assert predictions[1]["tokens"] == ["Reuters", "said", "."]
    assert predictions[2] == predictions[3] == {"tokens": [], "tags": [], "spans": []}
    assert len(predictions[4]["tags"]) == 2000
    assert "Zürich" in predictions[5]["tokens"][0] and "🙂" in predictions[5]["tokens"]
    for prediction in predictions:
        assert len(prediction["tags"]) == len(prediction["tokens"])
        for span in prediction["spans"]:
            words = prediction["tokens"][span["start"] : span["end"] + 1]
            assert span["text"] == " ".join(words)
            assert span["type"] in {"PER", "LOC", "ORG", "MISC"}


def test_evaluate_span_f1_agrees_with_conlleval(trained_archive, tmp_path):
    # `allennlp evaluate` (in-process: the CLI path is covered by tests/tagging/cli_test.py),
    # on the training fixture, where even a tiny tagger finds entities (so it is not 0 == 0)
    output = tmp_path / "metrics.json"
    evaluate_from_archive(trained_archive, TRAIN, metrics_output_file=str(output))
    allennlp_f1 = 100.0 * json.loads(output.read_text())["f1-measure-overall"]

    archive = load_archive(trained_archive)
    predictor = Predictor.from_archive(archive)
    reader = archive.validation_dataset_reader
    gold, predicted = [], []
    for instance in reader.read(TRAIN):
        words = instance.fields["metadata"]["words"]
        gold.append(list(instance.fields["tags"].labels))
        predicted.append(predictor.predict_json({"tokens": words})["tags"])
    official = conlleval_f1(gold, predicted)["f1"]
    assert official > 0
    assert abs(allennlp_f1 - official) < 0.01
