"""
Exact resume after a SIGKILL in the middle of an epoch.

For each kind of training the package ships (a dense LM, the LD-Net tagger, LD-Net pruning with
the `layer_pruning` callback, a distillation student), on the fixtures and through the real
command line:

1. `allennlp train` is killed with SIGKILL in the middle of an epoch (`tests/training/sigkill.py`),
   after a mid-epoch checkpoint (`save_every_num_batches`), or while writing one;
2. the same command with `--recover` finishes the run in a new process;
3. the result is compared with an uninterrupted run of the same config and seed (trained in this
   process, one torch thread in both): every checkpoint the uninterrupted run wrote exists and
   is equal (model state: every tensor `torch.equal`; training state: optimizer, metric tracker,
   callbacks' states incl. the random generators and the pruning masks' history, all equal),
   `best.th` is equal, and so are the metrics of every epoch, except the `training_*` metrics of
   the epoch that was interrupted (AllenNLP computes them from the batches trained after the
   resume only; see `ldnet_allennlp/training/exact_resume.py`).

Measured with AllenNLP's own `--recover` (`ldnet_allennlp.training.exact_resume` undone) on these
scenarios, final weights vs the uninterrupted run: dense LM up to 0.019 apart, tagger 0.0026,
pruning masks 0.07 (and 0.61 with the `layer_pruning` callback's old resume bug); the student,
killed while writing a checkpoint, did not resume at all (`EOFError`).

An `allennlp` process spends ~10 s of CPU importing. So the student's two processes run the
`allennlp` script itself (`tests/cli.py`), the others are forked from a process that imported
the command line once (`tests/training/forked_cli.py`: each still runs `allennlp.commands.main()`
in a process of its own), and all of them run in the background, single-threaded, from the
start of the module, while this process builds the fixture LMs and trains the uninterrupted
runs.
"""

import json
import re
import shutil
import signal
import subprocess
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params

import tests.training.sigkill  # noqa: F401  (registers "test_sigkill" for the uninterrupted runs)
from tests.cli import run_allennlp
from tests.conftest import CONFIGS_ROOT
from tests.configs_test import FIXTURE_EXT_VARS, build_ldnet_phase1
from tests.distillation.conftest import DISTILLATION_FIXTURE_EXT_VARS
from tests.lm.lm_archives import build_lm_archive_ext_vars
from tests.training.compare import assert_same_training, one_torch_thread
from tests.training.forked_cli import ForkedCli
from tests.training.sigkill import KILL_AT_VARIABLE

QUIET_LOGGER = {"type": "console_logger", "should_log_inputs": False}
# a checkpoint every 2 batches; keep them all, so that all of them can be compared
CHECKPOINTER = {"save_every_num_batches": 2, "keep_most_recent_by_count": None}


@dataclass
class Scenario:
    """A training config killed at `kill_at` (`LDNET_TEST_SIGKILL_AT`), then recovered."""

    config: Path
    overrides: Dict[str, Any]
    kill_at: str
    # the newest complete checkpoint the kill leaves, e.g. "e1_b2"
    resumes_from: str
    needs_lm_archives: bool = False
    # run through the `allennlp` script itself rather than a forked `allennlp` (forked_cli.py)
    script: bool = False
    needs_phase1: bool = False
    ext_vars: Dict[str, str] = field(default_factory=lambda: dict(FIXTURE_EXT_VARS))

    @property
    def interrupted_epoch(self) -> int:
        return int(self.kill_at.split(":")[0])


SCENARIOS = {
    # The shipped LM config: bucket batches (shuffled, with padding noise, also for validation),
    # lazy reading, fixed-size "epochs" that cut across passes over the data. Killed after batch
    # 3 of epoch 1 (of 3); resumes from the checkpoint after batch 2.
    "dense_lm": Scenario(
        CONFIGS_ROOT / "lm" / "dense_lm_forward.jsonnet",
        {
            "model.cutoffs": [10, 20],
            "vocabulary.min_count.tokens": 1,
            "vocabulary.max_vocab_size.tokens": 1000,
            "data_loader.batch_sampler.batch_size": 4,
            "data_loader.batches_per_epoch": 5,
            "validation_data_loader.batch_sampler.batch_size": 4,
            "trainer.num_epochs": 3,
            "trainer.callbacks": [QUIET_LOGGER, "test_sigkill"],
        },
        kill_at="1:3",
        resumes_from="e1_b2",
    ),
    # ner_ldnet (dropout in the tagger and in the LD-Net features), killed in its last epoch.
    "ldnet_tagger": Scenario(
        CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet",
        {
            "data_loader.batch_size": 4,
            "trainer.num_epochs": 2,
            "trainer.callbacks": [QUIET_LOGGER, "test_sigkill"],
        },
        kill_at="1:5",
        resumes_from="e1_b4",
        needs_lm_archives=True,
    ),
    # ner_ldnet_prune with the masks trainable from epoch 1 (`start_epoch`), killed in epoch 2:
    # the resumed run must train the masks (the callback's decision), and their values, the
    # callback's history and the budget-gated best epoch must match.
    "pruning": Scenario(
        CONFIGS_ROOT / "tagging" / "ner_ldnet_prune.jsonnet",
        {
            "data_loader.batch_size": 4,
            "trainer.num_epochs": 3,
            "trainer.callbacks": [
                QUIET_LOGGER,
                {"type": "layer_pruning", "start_epoch": 1, "record_every": 2},
                "test_sigkill",
            ],
        },
        kill_at="2:3",
        resumes_from="e2_b2",
        needs_lm_archives=True,
        needs_phase1=True,
    ),
    # The distilled student on the augmented transfer set, killed while writing the checkpoint
    # after batch 4 of epoch 1 (its training state is cut short): `--recover` deletes it, resumes
    # from the one before, and writes it again.
    "student": Scenario(
        CONFIGS_ROOT / "distillation" / "sst2_distilled_aug.jsonnet",
        {
            "data_loader.batch_sampler.batch_size": 8,
            "model.text_field_embedder.token_embedders.tokens.embedding_dim": 8,
            "model.encoder.input_size": 8,
            "model.encoder.hidden_size": 8,
            "model.hidden_dim": 8,
            "trainer.num_epochs": 2,
            "trainer.callbacks": [QUIET_LOGGER, "test_sigkill"],
        },
        kill_at="1:4:saving",
        resumes_from="e1_b2",
        ext_vars=dict(DISTILLATION_FIXTURE_EXT_VARS),
        script=True,
    ),
}


@dataclass
class KilledAndRecovered:
    scenario: Scenario
    directory: Path
    killed: subprocess.CompletedProcess
    # (epochs, batches) of every checkpoint whose two files were complete after the kill
    complete_after_kill: List[Tuple[int, int]]
    # checkpoint files the kill left incomplete (not a whole torch archive)
    incomplete_after_kill: List[str]
    recovered: subprocess.CompletedProcess


def overrides_of(scenario: Scenario) -> Dict[str, Any]:
    return dict(scenario.overrides, **{"trainer.checkpointer": CHECKPOINTER})


def kill_and_recover(
    scenario: Scenario, directory: Path, forked_cli: Optional[ForkedCli]
) -> KilledAndRecovered:
    """Runs in a background thread: the two `allennlp train` processes of a scenario."""
    command = [
        "train",
        str(scenario.config),
        "-s",
        str(directory),
        "--include-package",
        "ldnet_allennlp",
        "--include-package",
        "tests.training.sigkill",
        "-o",
        json.dumps(overrides_of(scenario)),
    ]
    env = dict(scenario.ext_vars, OMP_NUM_THREADS="1")

    def allennlp(args: List[str], env: Dict[str, str], log: str) -> subprocess.CompletedProcess:
        if scenario.script:
            return run_allennlp(args, env=env, check=False)
        return forked_cli.run(args, env, directory.parent / log)

    killed = allennlp(command, dict(env, **{KILL_AT_VARIABLE: scenario.kill_at}), "killed.log")
    complete = [
        checkpoint_point(path)
        for path in directory.glob("model_state_e*_b*.th")
        if is_complete_torch_file(path)
        and is_complete_torch_file(directory / path.name.replace("model_", "training_"))
    ]
    incomplete = sorted(
        path.name for path in directory.glob("*_state_e*_b*.th") if not is_complete_torch_file(path)
    )
    recovered = allennlp(command + ["--recover"], env, "recovered.log")
    return KilledAndRecovered(scenario, directory, killed, complete, incomplete, recovered)


@pytest.fixture(scope="module", autouse=True)
def single_torch_thread():
    """
    Training in this process uses one torch thread, as the `allennlp` processes do
    (OMP_NUM_THREADS=1): the same arithmetic, and on this loaded 2-core machine two threads
    make these tiny models ~10 times slower (measured: 35 s instead of 3 s for the LM archives).
    """
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def cli_runs(request, tmp_path_factory, single_torch_thread):
    """
    {scenario name: future KilledAndRecovered} for the scenarios of the selected tests, started
    at once (the fixture LMs and phase-1 tagger are built first where a scenario needs them).
    """
    selected = {item.name for item in request.session.items if item.module is request.module}
    names = [name for name in SCENARIOS if f"test_{name}_resumes_exactly" in selected]
    executor = ThreadPoolExecutor(max_workers=len(names) or 1)
    forked = [name for name in names if not SCENARIOS[name].script]
    forked_cli = ForkedCli({"OMP_NUM_THREADS": "1"}) if forked else None
    runs: Dict[str, Future] = {}

    def start(name: str) -> None:
        scenario = SCENARIOS[name]
        directory = tmp_path_factory.mktemp(name) / "resumed"
        runs[name] = executor.submit(kill_and_recover, scenario, directory, forked_cli)

    try:
        for name in names:
            if not SCENARIOS[name].needs_lm_archives:
                start(name)
        if any(SCENARIOS[name].needs_lm_archives for name in names):
            lm_archives = build_lm_archive_ext_vars(tmp_path_factory.mktemp("lm_archives"))
            for name in names:
                if SCENARIOS[name].needs_lm_archives and not SCENARIOS[name].needs_phase1:
                    SCENARIOS[name].ext_vars.update(lm_archives)
                    start(name)
        if any(SCENARIOS[name].needs_phase1 for name in names):
            phase1 = build_ldnet_phase1(tmp_path_factory.mktemp("phase1"))
            for name in names:
                if SCENARIOS[name].needs_phase1:
                    SCENARIOS[name].ext_vars.update(lm_archives, **phase1)
                    start(name)
        yield runs
    finally:
        executor.shutdown(wait=True)
        if forked_cli is not None:
            forked_cli.close()


def train_uninterrupted(scenario: Scenario, directory: Path) -> Path:
    env = dict(scenario.ext_vars, OMP_NUM_THREADS="1")
    overrides = json.dumps(overrides_of(scenario))
    params = Params.from_file(str(scenario.config), params_overrides=overrides, ext_vars=env)
    train_model(params, serialization_dir=str(directory))
    return directory


def check_resumed_exactly(name: str, cli_runs, tmp_path) -> KilledAndRecovered:
    scenario = SCENARIOS[name]
    # trained while the scenario's `allennlp` processes run in the background
    uninterrupted = train_uninterrupted(scenario, tmp_path / "uninterrupted")
    run: KilledAndRecovered = cli_runs[name].result()
    assert run.killed.returncode == -signal.SIGKILL, run.killed.stderr[-3000:]
    assert max(run.complete_after_kill) == checkpoint_point(scenario.resumes_from)
    if not scenario.kill_at.endswith(":saving"):
        assert run.incomplete_after_kill == []
    assert run.recovered.returncode == 0, run.recovered.stderr[-5000:]
    assert_same_training(uninterrupted, run.directory, scenario.interrupted_epoch)
    return run


def is_complete_torch_file(path: Path) -> bool:
    return path.is_file() and zipfile.is_zipfile(path)


def checkpoint_point(path) -> Tuple[int, int]:
    epochs, batches = re.search(r"e(\d+)_b(\d+)", str(path)).groups()
    return int(epochs), int(batches)


def delete_runs(run: KilledAndRecovered, tmp_path: Path) -> None:
    """A passing test's runs take ~100-300 MB (every checkpoint is kept): not left in /tmp."""
    shutil.rmtree(run.directory.parent)
    shutil.rmtree(tmp_path / "uninterrupted")


def test_dense_lm_resumes_exactly(cli_runs, tmp_path):
    delete_runs(check_resumed_exactly("dense_lm", cli_runs, tmp_path), tmp_path)


def test_ldnet_tagger_resumes_exactly(cli_runs, tmp_path):
    delete_runs(check_resumed_exactly("ldnet_tagger", cli_runs, tmp_path), tmp_path)


def test_pruning_resumes_exactly(cli_runs, tmp_path):
    run = check_resumed_exactly("pruning", cli_runs, tmp_path)
    # the masks did train after the resume (the comparison would also pass if both froze)
    before = torch.load(run.directory / "model_state_e2_b2.th")
    after = torch.load(run.directory / "model_state_e3_b0.th")
    mask = next(name for name in after if name.endswith("layer_mask") and after[name].dim() == 2)
    assert not torch.equal(before[mask], after[mask])
    delete_runs(run, tmp_path)


def test_student_resumes_exactly(cli_runs, tmp_path):
    run = check_resumed_exactly("student", cli_runs, tmp_path)
    assert run.incomplete_after_kill == ["training_state_e1_b4.th"]
    log = run.recovered.stdout + run.recovered.stderr
    assert "deleting the incomplete checkpoint model_state_e1_b4.th" in log
    delete_runs(run, tmp_path)
