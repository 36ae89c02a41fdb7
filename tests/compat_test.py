"""One test per compatibility fix in `ldnet_allennlp.compat`; each fails without its fix."""

import logging
import warnings

import numpy
import pytest
import torch

import ldnet_allennlp  # noqa: F401  (applies the fixes)
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.training import gradient_descent_trainer
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from tests.conftest import FIXTURES_ROOT


def test_checkpoint_with_numpy_scalars_loads_with_weights_only(tmp_path):
    # AllenNLP's training state holds numpy scalars, e.g. in the metric tracker.
    state = {"best_f1": numpy.float64(0.5), "epochs": numpy.int64(3), "tensor": torch.ones(2)}
    torch.save(state, tmp_path / "training_state.th")
    loaded = torch.load(tmp_path / "training_state.th")  # weights_only=True is torch's default
    assert loaded["best_f1"] == 0.5 and loaded["epochs"] == 3
    assert isinstance(loaded["best_f1"], numpy.float64)


def test_weights_only_still_refuses_arbitrary_objects(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))

    torch.save({"payload": Payload()}, tmp_path / "evil.th")
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(tmp_path / "evil.th")


def test_reduce_on_plateau_scheduler_constructs_and_steps():
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = LearningRateScheduler.from_params(
        Params({"type": "reduce_on_plateau", "patience": 0, "factor": 0.5, "verbose": True}),
        optimizer=optimizer,
    )
    scheduler.step(1.0)
    scheduler.step(2.0)  # no improvement ("min" mode), patience 0: halve the learning rate
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.5)


def test_a_config_with_reduce_on_plateau_trains(tmp_path):
    # the fixture LM (Adam, lr 0.01) for 2 epochs; dev perplexity is the scheduler's metric
    params = Params.from_file(
        str(FIXTURES_ROOT / "lm" / "dense_lm.jsonnet"),
        params_overrides={
            "train_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt"),
            "validation_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt"),
            "trainer.num_epochs": 2,
            "trainer.patience": None,
            "trainer.learning_rate_scheduler": {
                "type": "reduce_on_plateau",
                "factor": 0.5,
                "patience": 0,
                "threshold": 1e9,  # no epoch counts as an improvement: halve after each one
            },
        },
    )
    train_model(params, serialization_dir=str(tmp_path / "run"))
    learning_rates = [
        torch.load(tmp_path / "run" / f"training_state_e{epoch}_b0.th")["optimizer"][
            "param_groups"
        ][0]["lr"]
        for epoch in (1, 2)
    ]
    assert learning_rates == pytest.approx([0.01 / 2, 0.01 / 4])


def test_trainer_autocast_emits_no_future_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gradient_descent_trainer.amp.autocast(False):
            pass
    assert isinstance(gradient_descent_trainer.amp.autocast(False), torch.amp.autocast)


def _vocabulary_warnings(caplog, directory) -> list:
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["a", "b"], "tokens")
    with caplog.at_level(logging.WARNING, logger="allennlp.data.vocabulary"):
        caplog.clear()
        vocab.save_to_files(str(directory))
        vocab.save_to_files(str(directory))  # the second save finds the folder full
    return [r for r in caplog.records if "is not empty" in r.getMessage()]


def test_resaving_a_resumed_runs_vocabulary_is_quiet(tmp_path, caplog):
    # a serialization directory being resumed: config.json next to vocabulary/
    (tmp_path / "config.json").write_text("{}")
    assert _vocabulary_warnings(caplog, tmp_path / "vocabulary") == []


def test_other_non_empty_vocabulary_folders_still_warn(tmp_path, caplog):
    assert len(_vocabulary_warnings(caplog, tmp_path / "vocabulary")) == 1
    assert len(_vocabulary_warnings(caplog, tmp_path / "my_vocab")) == 1
