"""`ldnet_allennlp.patches.torch_safe_globals`: numpy scalars load under `weights_only`."""

import numpy
import pytest
import torch

import ldnet_allennlp  # noqa: F401  (applies the patches)


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
