"""
Distributed training on AllenNLP's own DDP engine, through the real `allennlp train` command
line: `"distributed": {"cuda_devices": [-1, -1]}` = 2 CPU worker processes (gloo), on fixtures,
for the dense LM, the LD-Net tagger in its pruning phase and the distillation student.

For each: the run finishes with 2 workers; the validation metrics it reports (aggregated over
both workers' halves of the validation set) equal a single-process evaluation of its archive on
the whole validation file; the archive has the parameter names and shapes of a single-process
run of the same config. For pruning, every worker's masks and decisions (live layers, the
penalty's budget gate, the within-budget metric, best-so-far) are the same
(`layer_pruning_workers.json`) and the archive holds them.

Cost: AllenNLP starts DDP workers with `spawn`, so each worker imports allennlp again (tens of
seconds on a loaded 2-core machine) and the trainings themselves take seconds. The three CLI runs
therefore run concurrently (threads waiting on subprocesses), and the single-process reference
runs train in this process meanwhile.
"""

import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate

from ldnet_allennlp.pruning.callback import WORKERS_FILE
from tests.cli import run_allennlp
from tests.configs_test import FIXTURE_EXT_VARS, FIXTURE_OVERRIDES, build_ldnet_phase1
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.distillation.conftest import DISTILLATION_FIXTURE_EXT_VARS
from tests.lm.lm_archives import build_lm_archive_ext_vars

TWO_CPU_WORKERS = {"distributed": {"cuda_devices": [-1, -1]}}
# One OpenMP thread per worker (what torchrun sets): two workers with 2 threads each on 2 cores
# spin against each other (measured: 53 s instead of 6 s for one epoch of the pruning run).
WORKER_ENV = {"OMP_NUM_THREADS": "1"}
# the pruning run's budget: 11 live layers of the LMs' 2 x 6
BUDGET = 11


@dataclass
class Run:
    """One config trained twice: with 2 DDP workers via the CLI, and in this process alone."""

    config: Path
    overrides: Dict[str, Any]
    validation_path: str
    ext_vars: Dict[str, str] = field(default_factory=dict)
    directory: Optional[Path] = None
    cli: Optional[Future] = None
    single_process_dir: Optional[Path] = None

    def start(self, pool: ThreadPoolExecutor, directory: Path) -> None:
        self.directory = directory
        overrides = json.dumps({**self.overrides, **TWO_CPU_WORKERS})
        args = ["train", str(self.config), "-s", str(directory / "ddp")]
        args += ["-o", overrides, "--include-package", "ldnet_allennlp"]
        self.cli = pool.submit(run_allennlp, args, env={**self.ext_vars, **WORKER_ENV})

    def train_single_process(self) -> None:
        params = Params.from_file(
            str(self.config), params_overrides=self.overrides, ext_vars=self.ext_vars
        )
        self.single_process_dir = self.directory / "single"
        train_model(params, serialization_dir=str(self.single_process_dir))

    @property
    def ddp_dir(self) -> Path:
        self.cli.result()  # re-raises the CLI's failure (with its stderr)
        return self.directory / "ddp"


def lm_run() -> Run:
    """
    The real forward-LM config on fixture text (configs_test's fixture overrides), with a last
    adaptive-softmax cluster of 2 rare words and batches of 2 sentences: some workers' batches
    miss that cluster, which stopped DDP ("Expected to have finished reduction ...") before the
    dense LM added `0 ·` its softmax parameters to the loss under DDP.
    """
    overrides = {
        **FIXTURE_OVERRIDES["lm"],
        "model.cutoffs": [10, 45],  # the fixture vocabulary has 47 entries
        "data_loader.batch_sampler.batch_size": 2,
        "trainer.num_epochs": 1,
    }
    return Run(
        CONFIGS_ROOT / "lm" / "dense_lm_forward.jsonnet",
        overrides,
        FIXTURE_EXT_VARS["LM_VALIDATION_DATA_PATH"],
        ext_vars=dict(FIXTURE_EXT_VARS),
    )


def student_run() -> Run:
    """Tang et al.'s student distilled from the fixture transfer set (teacher logits)."""
    return Run(
        CONFIGS_ROOT / "distillation" / "sst2_distilled.jsonnet",
        {"trainer.num_epochs": 2},
        str(FIXTURES_ROOT / "distillation" / "sst2" / "sst2_fixture_dev.tsv"),
        ext_vars=dict(DISTILLATION_FIXTURE_EXT_VARS),
    )


def pruning_run() -> Run:
    """
    LD-Net phase 2 (penalty + `layer_pruning` callback) from a fixture phase-1 tagger. Batches
    of 4 (3 optimizer steps per worker and epoch on the fixture's 12 sentences each), the masks'
    learning rate and a budget of 11 of the 12 layers pinned, so that in 2 epochs one layer dies:
    the penalty's budget gate switches off and the within-budget metric becomes defined.
    """
    penalty = {"type": "layer_selection", "lambda0": 1.6, "budget": BUDGET}
    overrides = {
        "trainer.num_epochs": 2,
        "data_loader.batch_size": 4,
        "trainer.optimizer.parameter_groups": [[["layer_mask"], {"lr": 0.2}]],
        "model.regularizer.regexes": [["layer_mask", penalty]],
    }
    return Run(
        CONFIGS_ROOT / "tagging" / "ner_ldnet_prune.jsonnet",
        overrides,
        FIXTURE_EXT_VARS["CONLL03_DEV_DATA_PATH"],
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed")
    runs = {"lm": lm_run(), "student": student_run(), "pruning": pruning_run()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the CLI runs use the other core
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        try:
            runs["lm"].start(pool, root / "lm")
            runs["student"].start(pool, root / "student")
            # the pruning config starts from a phase-1 tagger (tests/configs_test.py builds it)
            pruning = runs["pruning"]
            pruning.ext_vars.update(FIXTURE_EXT_VARS)
            pruning.ext_vars.update(build_lm_archive_ext_vars(root / "lms"))
            pruning.ext_vars.update(build_ldnet_phase1(root / "phase1"))
            runs["pruning"].start(pool, root / "pruning")
            for run in runs.values():
                run.train_single_process()
            yield runs
        finally:
            torch.set_num_threads(threads)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def weight_shapes(archive: Path) -> Dict[str, tuple]:
    model = load_archive(str(archive)).model
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def evaluate_alone(archive: Path, data_path: str) -> Dict[str, float]:
    """The archive's metrics on the whole file, in this (non-distributed) process."""
    loaded = load_archive(str(archive))
    instances = list(loaded.validation_dataset_reader.read(data_path))
    loader = SimpleDataLoader(instances, batch_size=16, vocab=loaded.model.vocab)
    return evaluate(loaded.model, loader, cuda_device=-1)


def check_run(run: Run, key_metrics) -> Dict[str, Any]:
    ddp_dir = run.ddp_dir
    metrics = read_json(ddp_dir / "metrics.json")
    # both workers trained (AllenNLP reports each worker's memory)
    assert {"peak_worker_0_memory_MB", "peak_worker_1_memory_MB"} <= set(metrics)
    assert (ddp_dir / "model.tar.gz").exists()

    # aggregated: the DDP validation metrics of the archived (best) epoch are those of one
    # process scoring the whole validation file with the archive
    alone = evaluate_alone(ddp_dir / "model.tar.gz", run.validation_path)
    for key in key_metrics:
        assert f"best_validation_{key}" in metrics and key in alone
    compared = [key for key in alone if f"best_validation_{key}" in metrics and "loss" not in key]
    for key in compared:
        assert metrics[f"best_validation_{key}"] == pytest.approx(alone[key], rel=1e-5), key

    # the same parameters, by name and shape, as a single-process run of the same config
    assert weight_shapes(ddp_dir / "model.tar.gz") == weight_shapes(
        run.single_process_dir / "model.tar.gz"
    )
    return metrics


def test_dense_lm_trains_with_two_workers(runs):
    metrics = check_run(runs["lm"], ["perplexity"])
    assert metrics["best_validation_perplexity"] > 1.0


def test_distillation_student_trains_with_two_workers(runs):
    check_run(runs["student"], ["accuracy"])


def test_pruning_with_two_workers_prunes_identically(runs):
    run = runs["pruning"]
    metrics = check_run(run, ["accuracy", "f1-measure-overall"])

    workers = read_json(run.ddp_dir / WORKERS_FILE)
    assert workers["world_size"] == 2
    first, second = sorted(workers["workers"], key=lambda worker: worker["rank"])
    assert [first["rank"], second["rank"]] == [0, 1]
    assert [record["epoch"] for record in first["epochs"]] == [0, 1]
    # masks, live layers, the penalty's budget gate, the within-budget metric and the
    # best-checkpoint decision: exactly the same on both workers, after every epoch
    assert first["epochs"] == second["epochs"]
    for record in first["epochs"]:
        epoch_metrics = read_json(run.ddp_dir / f"metrics_epoch_{record['epoch']}.json")
        assert record["live_layers"] == epoch_metrics["validation_live_layers"]
        (masks,) = record["masks"].values()
        over_budget = sum(z > 0 for row in masks for z in row) > BUDGET
        assert record["budget_gate"] == [over_budget]
        within = -1.0 if over_budget else epoch_metrics["validation_f1-measure-overall"]
        assert record["within_budget_metric"] == within
        assert epoch_metrics["validation_f1-measure-overall-within-budget"] == within
    # both sides of the gate: over budget after epoch 0, within after epoch 1 (best)
    assert [record["budget_gate"] for record in first["epochs"]] == [[True], [False]]
    assert [record["is_best_so_far"] for record in first["epochs"]] == [True, True]
    assert metrics["best_epoch"] == 1
    # the masks stayed in [0, 1]
    final = torch.tensor(list(first["epochs"][-1]["masks"].values())[0])
    assert final.min() >= 0.0 and final.max() <= 1.0

    # the archive holds the masks of the best epoch
    best = first["epochs"][metrics["best_epoch"]]
    model = load_archive(str(run.ddp_dir / "model.tar.gz")).model
    (archived,) = [p for name, p in model.named_parameters() if name.endswith("layer_mask")]
    assert archived.tolist() == list(best["masks"].values())[0]
