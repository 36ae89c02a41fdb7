"""`ldnet_allennlp.patches.checkpointer_load_checkpoint`: a checkpoint cut short is skipped."""

import logging

import torch
from allennlp.training.checkpointer import Checkpointer

import ldnet_allennlp  # noqa: F401  (applies the patches)


def write_checkpoint(directory, epochs: int, batches: int) -> None:
    torch.save(
        {"weight": torch.full((2,), float(epochs))},
        directory / f"model_state_e{epochs}_b{batches}.th",
    )
    trainer_state = {"epochs_completed": epochs, "batches_in_epoch_completed": batches}
    torch.save(trainer_state, directory / f"training_state_e{epochs}_b{batches}.th")


def test_an_incomplete_newest_checkpoint_is_deleted_and_the_one_before_loaded(tmp_path, caplog):
    write_checkpoint(tmp_path, 1, 0)
    write_checkpoint(tmp_path, 1, 4)
    model_state = tmp_path / "model_state_e1_b4.th"
    model_state.write_bytes(model_state.read_bytes()[:100])  # killed while writing it
    checkpointer = Checkpointer(str(tmp_path), save_every_num_batches=2)
    with caplog.at_level(logging.WARNING):
        checkpoint = checkpointer.load_checkpoint()
    assert torch.equal(checkpoint.model_state["weight"], torch.full((2,), 1.0))
    assert checkpoint.trainer_state["batches_in_epoch_completed"] == 0
    assert not model_state.exists() and not (tmp_path / "training_state_e1_b4.th").exists()
    assert "deleting the incomplete checkpoint model_state_e1_b4.th" in caplog.text
    # the "every N batches" schedule continues from the loaded checkpoint
    assert checkpointer._last_save_num_epochs_completed == 1
    assert checkpointer._last_save_num_batches_in_epoch_completed == 0


def test_no_checkpoint_loads_nothing(tmp_path):
    assert Checkpointer(str(tmp_path)).load_checkpoint() is None
