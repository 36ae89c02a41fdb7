import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers import LearningRateScheduler


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
