"""
`allennlp train / evaluate / predict / train --recover` through the real command line on the
fixture, with our package included: the path a user takes.
"""

import json
import pickle
import shutil
import tarfile

import pytest
import torch
from allennlp.models.archival import load_archive

from tests.cli import noisy_lines, run_allennlp
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT

CONFIG = str(CONFIGS_ROOT / "tagging" / "ner_vanilla.jsonnet")
TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
DATA_ENV = {
    "CONLL03_TRAIN_DATA_PATH": TRAIN,
    "CONLL03_DEV_DATA_PATH": DEV,
    "CONLL03_TEST_DATA_PATH": DEV,
}
# The cosine scheduler puts numpy scalars into the training state: the checkpoint that
# `--recover` needs then only loads with `ldnet_allennlp/patches/torch_safe_globals.py`.
OVERRIDES = json.dumps(
    {"trainer.num_epochs": 2, "trainer.learning_rate_scheduler": {"type": "cosine", "t_initial": 2}}
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    serialization_dir = tmp_path_factory.mktemp("ner_vanilla")
    process = run_allennlp(
        ["train", CONFIG, "-s", str(serialization_dir), "-f", "-o", OVERRIDES]
        + ["--include-package", "ldnet_allennlp"],
        env=DATA_ENV,
    )
    return serialization_dir, process


def test_train_is_quiet_and_archives(trained):
    serialization_dir, process = trained
    assert (serialization_dir / "model.tar.gz").exists()
    assert noisy_lines(process.stdout + process.stderr) == []
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    assert metrics["epoch"] == 1
    assert "best_validation_f1-measure-overall" in metrics


def test_evaluate_reports_span_f1(trained, tmp_path):
    serialization_dir, _ = trained
    output = tmp_path / "metrics.json"
    run_allennlp(
        ["evaluate", str(serialization_dir / "model.tar.gz"), DEV, "--output-file", str(output)]
        + ["--include-package", "ldnet_allennlp"]
    )
    metrics = json.loads(output.read_text())
    # the archive holds the best epoch's weights, and the dev file is the validation file: the
    # span F1 and loss of that epoch's validation, recomputed by `evaluate`
    trained_metrics = json.loads((serialization_dir / "metrics.json").read_text())
    best = trained_metrics["best_validation_f1-measure-overall"]
    assert metrics["f1-measure-overall"] == pytest.approx(best, abs=1e-9)
    assert metrics["loss"] == pytest.approx(trained_metrics["best_validation_loss"], rel=1e-5)


def test_predict_raw_text_and_tokens_without_predictor_flag(trained, tmp_path):
    serialization_dir, _ = trained
    inputs = tmp_path / "input.jsonl"
    inputs.write_text(
        '{"sentence": "John Smith visited Paris on Monday."}\n'
        '{"tokens": ["Reuters", "said", "."]}\n'
        '{"sentence": ""}\n'
    )
    output = tmp_path / "predictions.jsonl"
    run_allennlp(
        ["predict", str(serialization_dir / "model.tar.gz"), str(inputs)]
        + ["--output-file", str(output), "--silent", "--include-package", "ldnet_allennlp"]
    )
    predictions = [json.loads(line) for line in output.read_text().splitlines()]
    assert predictions[0]["tokens"] == ["John", "Smith", "visited", "Paris", "on", "Monday", "."]
    assert len(predictions[0]["tags"]) == 7
    assert predictions[1]["tokens"] == ["Reuters", "said", "."]
    assert predictions[2] == {"tokens": [], "tags": [], "spans": []}
    for prediction in predictions:
        for span in prediction["spans"]:
            words = prediction["tokens"][span["start"] : span["end"] + 1]
            assert span["text"] == " ".join(words)


def test_recover_resumes_from_a_checkpoint_with_numpy_scalars(trained, tmp_path):
    serialization_dir, _ = trained
    resumed = tmp_path / "resumed"
    shutil.copytree(serialization_dir, resumed)
    # As if the run had been killed after its first epoch.
    for name in ["model_state_e2_b0.th", "training_state_e2_b0.th", "metrics_epoch_1.json"]:
        (resumed / name).unlink()
    (resumed / "model.tar.gz").unlink()
    process = run_allennlp(
        ["train", CONFIG, "-s", str(resumed), "--recover", "-o", OVERRIDES]
        + ["--include-package", "ldnet_allennlp"],
        env=DATA_ENV,
    )
    assert "Recovering from prior training" in process.stderr
    # epoch 0 was not trained again; epoch 1 was
    assert (resumed / "metrics_epoch_0.json").read_text() == (
        serialization_dir / "metrics_epoch_0.json"
    ).read_text()
    assert json.loads((resumed / "metrics_epoch_1.json").read_text())["epoch"] == 1
    assert (resumed / "model.tar.gz").exists()
    assert noisy_lines(process.stdout + process.stderr) == []


class _Payload:
    """Unpickling this would run code; weights_only loading must refuse it."""

    def __reduce__(self):
        return (exec, ("raise SystemExit('arbitrary code ran while loading')",))


def test_archive_with_a_pickled_object_is_refused(trained, tmp_path):
    serialization_dir, _ = trained
    with tarfile.open(serialization_dir / "model.tar.gz") as archive:
        archive.extractall(tmp_path / "unpacked")
    weights = tmp_path / "unpacked" / "weights.th"
    state = torch.load(weights)
    state["payload"] = _Payload()
    torch.save(state, weights)
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as archive:
        for path in (tmp_path / "unpacked").iterdir():
            archive.add(path, arcname=path.name)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_archive(str(evil))
