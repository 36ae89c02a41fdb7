import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.optimizers import Optimizer


def scheduler(decay, lr=0.015):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr, momentum=0.9)
    params = Params({"type": "inverse_time_decay", "decay": decay})
    return optimizer, LearningRateScheduler.from_params(optimizer=optimizer, params=params)


def test_learning_rate_of_each_epoch_is_lr_over_one_plus_decay_times_epoch():
    optimizer, schedule = scheduler(0.05)
    seen = []
    for _ in range(4):  # the trainer steps the scheduler once after each epoch
        seen.append(optimizer.param_groups[0]["lr"])
        schedule.step()
    # by hand: 0.015 / 1, / 1.05, / 1.10, / 1.15
    assert seen == pytest.approx([0.015, 0.015 / 1.05, 0.015 / 1.10, 0.015 / 1.15], rel=1e-12)


def test_resumes_from_its_state():
    optimizer, schedule = scheduler(0.05)
    schedule.step()
    schedule.step()
    state = schedule.state_dict()
    resumed_optimizer, resumed = scheduler(0.05)
    resumed.load_state_dict(state)
    resumed.step()
    assert resumed_optimizer.param_groups[0]["lr"] == pytest.approx(0.015 / 1.15, rel=1e-12)


def test_refuses_a_negative_decay():
    with pytest.raises(ConfigurationError, match="decay must be >= 0"):
        scheduler(-0.1)


def multi_scheduler():
    """AllenNLP's `multi` optimizer as ldnet_prune.libsonnet builds it for an SGD tagger: SGD for
    the tagger, Adam for the layer mask."""
    model = torch.nn.Module()
    model.weight = torch.nn.Parameter(torch.zeros(2))
    model.layer_mask = torch.nn.Parameter(torch.ones(2))
    optimizer = Optimizer.from_params(
        model_parameters=list(model.named_parameters()),
        params=Params(
            {
                "type": "multi",
                "optimizers": {
                    "default": {"type": "sgd", "lr": 0.015, "momentum": 0.9},
                    "masks": {"type": "adam", "lr": 0.2},
                },
                "parameter_groups": [[["layer_mask"], {"optimizer_name": "masks"}]],
            }
        ),
    )
    params = Params({"type": "inverse_time_decay", "decay": 0.05})
    return optimizer, LearningRateScheduler.from_params(optimizer=optimizer, params=params)


def lrs(optimizer):
    return {name: each.param_groups[0]["lr"] for name, each in optimizer.optimizers.items()}


def test_every_optimizer_of_a_multi_optimizer_follows_the_schedule():
    optimizer, schedule = multi_scheduler()
    schedule.step()
    schedule.step()
    # the optimizers that step the parameters, not the wrapper's copies of their groups
    assert lrs(optimizer) == pytest.approx({"default": 0.015 / 1.10, "masks": 0.2 / 1.10})
    state = schedule.state_dict()
    resumed_optimizer, resumed = multi_scheduler()
    resumed.load_state_dict(state)
    resumed.step()
    assert lrs(resumed_optimizer) == pytest.approx({"default": 0.015 / 1.15, "masks": 0.2 / 1.15})
