"""`ldnet_allennlp.patches.trainer_amp`: the trainer's autocast without a `FutureWarning`."""

import warnings

import pytest
import torch
from allennlp.training import gradient_descent_trainer

import ldnet_allennlp  # noqa: F401  (applies the patches)


def test_still_needed_torch_cuda_amp_warns():
    with pytest.warns(FutureWarning):
        with torch.cuda.amp.autocast(False):
            pass


def test_trainer_autocast_emits_no_future_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gradient_descent_trainer.amp.autocast(False):
            pass
    assert isinstance(gradient_descent_trainer.amp.autocast(False), torch.amp.autocast)
