"""
What the serving tests share: the fixture tagger (a tiny pruned LD-Net NER archive whose
predictions are recorded in `fixtures/archives/expected_predictions.json`), loaded once,
and `served`, the real `allennlp ldnet-serve` command serving it on a free loopback port.
"""

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import httpx
import pytest

from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT

ARCHIVE = FIXTURES_ROOT / "archives" / "ner_ldnet_pruned.tar.gz"
RECORDED = json.loads((FIXTURES_ROOT / "archives" / "expected_predictions.json").read_text())
# the archive's recorded inputs and what `allennlp predict` gave for each
RECORDED_INPUTS: List[Dict[str, Any]] = RECORDED["archives"]["ner_ldnet_pruned"]["inputs"]
RECORDED_OUTPUTS: List[Dict[str, Any]] = [
    output["predictor"] for output in RECORDED["archives"]["ner_ldnet_pruned"]["outputs"]
]
# limits of the served command, small so that the tests' bodies stay small
MAX_CHARS = 200
MAX_SENTENCES = 8


@pytest.fixture(scope="session")
def tagger() -> Tuple[Any, Dict[str, Any]]:
    """The fixture archive's `ldnet_tagger` predictor and its facts, loaded once."""
    import torch

    from ldnet_allennlp.serving.loaded_tagger import load_tagger

    torch.set_num_threads(1)
    return load_tagger(str(ARCHIVE))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Served:
    url: str
    process: subprocess.Popen
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    """
    `allennlp ldnet-serve <fixture archive> --port <free>` from the repository root (as
    docs/serving_and_export.md runs it), until the tests are done; then SIGTERM, which must stop
    it cleanly.
    """
    port = free_port()
    log = tmp_path_factory.mktemp("served") / "ldnet-serve.log"
    command = [
        str(Path(sys.executable).with_name("allennlp")),
        "ldnet-serve",
        str(ARCHIVE),
        "--port",
        str(port),
        "--threads",
        "1",
        "--max-chars",
        str(MAX_CHARS),
        "--max-sentences",
        str(MAX_SENTENCES),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with open(log, "w") as handle:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            pytest.fail(f"ldnet-serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"ldnet-serve did not answer within 120 s:\n{log.read_text()}")
        time.sleep(0.3)
    yield Served(url, process, log)
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=30)
