"""`ldnet_allennlp.training.finished`: a finished run, a run archived on SIGTERM before its last
epoch (moved aside, to be resumed) and a run with nothing yet, in Python and from the shell."""

import subprocess
import sys

from ldnet_allennlp.training.finished import trained


def test_finished_interrupted_and_empty_runs(tmp_path):
    finished = tmp_path / "finished"
    finished.mkdir()
    for name in ("model.tar.gz", "metrics.json", "training_state_e4.th"):
        (finished / name).write_text(name)
    assert trained(finished) and (finished / "model.tar.gz").exists()

    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / "model.tar.gz").write_text("best of 2 epochs")
    (stopped / "training_state_e1.th").write_text("state")
    assert not trained(stopped)
    assert not (stopped / "model.tar.gz").exists()
    assert (stopped / "model_interrupted.tar.gz").read_text() == "best of 2 epochs"

    assert not trained(tmp_path / "nothing")


def test_the_command_line_exits_0_only_for_a_finished_run(tmp_path):
    (tmp_path / "model.tar.gz").write_text("archive")
    (tmp_path / "metrics.json").write_text("{}")
    command = [sys.executable, "-m", "ldnet_allennlp.training.finished"]
    assert subprocess.run([*command, str(tmp_path)]).returncode == 0
    assert subprocess.run([*command, str(tmp_path / "nothing")]).returncode == 1
    usage = subprocess.run(command, capture_output=True, text=True)
    assert usage.returncode == 1 and "usage: python -m ldnet_allennlp" in usage.stderr
