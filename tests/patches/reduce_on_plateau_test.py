"""`ldnet_allennlp.patches.reduce_on_plateau`: AllenNLP's scheduler on torch without `verbose`."""

import inspect

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

import ldnet_allennlp  # noqa: F401  (applies the patches)
from ldnet_allennlp.patches.reduce_on_plateau import ReduceOnPlateauLearningRateScheduler
from tests.conftest import FIXTURES_ROOT


def test_still_needed_torch_has_no_verbose():
    parameters = inspect.signature(torch.optim.lr_scheduler.ReduceLROnPlateau).parameters
    assert "verbose" not in parameters


def test_registered_under_allennlps_name():
    assert (
        LearningRateScheduler.by_name("reduce_on_plateau") is ReduceOnPlateauLearningRateScheduler
    )


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
