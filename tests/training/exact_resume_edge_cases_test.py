"""
In-process complements to resume_test.py (no `allennlp` processes, seconds each): the tiny
fixture LM interrupted by an exception (not a kill), then recovered with
`train_model(..., recover=True)` in this process, at the points the kill tests do not reach:

- mid-epoch in the first epoch (nothing before the checkpoint to replay but part of an epoch);
- after a mid-epoch checkpoint was lost, from an end-of-epoch checkpoint;
- with gradient accumulation, during validation, right after the checkpoint that followed the
  epoch's last, short group of batches (5 batches in groups of 2).

Each must end equal to the uninterrupted run (`tests.training.compare.assert_same_training`).
"""

import json
from typing import Optional, Tuple

import pytest
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.training.callbacks import TrainerCallback

from tests.conftest import FIXTURES_ROOT
from tests.training.compare import assert_same_training, one_torch_thread

# (epoch, batch number, is_training) at which the `test_interrupt` callback raises, or None
INTERRUPT_AT: Optional[Tuple[int, int, bool]] = None


class Interrupted(Exception):
    pass


@TrainerCallback.register("test_interrupt")
class InterruptCallback(TrainerCallback):
    def on_batch(
        self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
        is_training, is_primary=True, batch_grad_norm=None, **kwargs,
    ) -> None:  # fmt: skip
        if INTERRUPT_AT == (epoch, batch_number, is_training):
            raise Interrupted(INTERRUPT_AT)


LM_OVERRIDES = {
    "train_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt"),  # 5 batches of 8
    "validation_data_path": str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt"),
    "trainer.num_epochs": 3,
    "trainer.callbacks": [{"type": "console_logger", "should_log_inputs": False}, "test_interrupt"],
}
EVERY_2 = {"save_every_num_batches": 2, "keep_most_recent_by_count": None}


@pytest.mark.parametrize(
    "overrides, interrupt_at, resumes_from",
    [
        ({"trainer.checkpointer": EVERY_2}, (0, 3, True), "e0_b2"),
        ({"trainer.checkpointer": {"keep_most_recent_by_count": None}}, (1, 3, True), "e1_b0"),
        (
            {
                "trainer.num_gradient_accumulation_steps": 2,
                "trainer.checkpointer": dict(EVERY_2, save_every_num_batches=1),
            },
            (1, 1, False),
            "e1_b3",
        ),
    ],
    ids=["first_epoch", "end_of_epoch_checkpoint", "accumulation_short_last_group"],
)
def test_interrupted_and_recovered_in_process(overrides, interrupt_at, resumes_from, tmp_path):
    global INTERRUPT_AT
    changes = json.dumps(dict(LM_OVERRIDES, **overrides))

    def train(directory, recover=False):
        params = Params.from_file(str(FIXTURES_ROOT / "lm" / "dense_lm.jsonnet"), changes)
        with one_torch_thread():
            train_model(params, serialization_dir=str(directory), recover=recover)

    train(tmp_path / "uninterrupted")
    INTERRUPT_AT = interrupt_at
    try:
        with pytest.raises(Interrupted):
            train(tmp_path / "resumed")
    finally:
        INTERRUPT_AT = None
    newest = max(tmp_path.glob("resumed/training_state_e*_b*.th"), key=lambda p: p.stat().st_mtime)
    assert newest.name == f"training_state_{resumes_from}.th"
    train(tmp_path / "resumed", recover=True)
    assert_same_training(tmp_path / "uninterrupted", tmp_path / "resumed", interrupt_at[0])
