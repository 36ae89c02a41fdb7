"""
Shared, session-scoped artefacts of the bad-input suite (`docs/bad_inputs.md` lists every case):
the fixture dense LMs (shared with the tagging tests in the same process), one LD-Net tagger
trained for one epoch on the CoNLL-03 fixture, and one real `allennlp predict` run on it with bad
input lines. That subprocess spends most of its time starting AllenNLP, so it is started as soon
as the tagger exists and runs while the other tests do; `finished_predict_run()` waits for it.
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
from allennlp.commands.train import train_model
from allennlp.common import Params

from tests.cli import ALLENNLP, PROJECT_ROOT
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import fixture_lm_archives

CONLL03_TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
CONLL03_DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
TRICKY_TOKENS = ["\x00", "\x1c", "🙂", "👍🏽", "\u200b", "\u202eRTL", "日本", "Paris"]
LONG_SENTENCE = [f"w{i}" for i in range(2000)]
# `allennlp predict` input: a 1-token line, two blank lines, control characters and emoji, 2,000
# tokens, then a line that is not JSON, then one never reached
PREDICT_INPUT = (
    '{"tokens": ["Paris"]}\n'
    "\n"
    "   \n"
    + json.dumps({"tokens": TRICKY_TOKENS}, ensure_ascii=False)
    + "\n"
    + json.dumps({"tokens": LONG_SENTENCE})
    + "\n"
    '{"sentence": "Maria visited Berlin.", \n'
    '{"tokens": ["never", "reached"]}\n'
)
_PREDICT_RUN: Dict[str, object] = {}


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (see tests/conftest.py)."""
    yield


@pytest.fixture(scope="session")
def lm_archives() -> Dict[str, str]:
    """{"forward": archive, "backward": archive}: the tiny fixture dense LMs."""
    return fixture_lm_archives()


@pytest.fixture(scope="session")
def data_ext_vars(lm_archives) -> Dict[str, str]:
    return {
        "CONLL03_TRAIN_DATA_PATH": CONLL03_TRAIN,
        "CONLL03_DEV_DATA_PATH": CONLL03_DEV,
        "CONLL03_TEST_DATA_PATH": CONLL03_DEV,
        "FORWARD_LM_ARCHIVE": lm_archives["forward"],
        "BACKWARD_LM_ARCHIVE": lm_archives["backward"],
    }


@pytest.fixture(scope="session")
def ldnet_run(tmp_path_factory, data_ext_vars) -> Path:
    """Serialization dir of `ner_ldnet.jsonnet` trained 1 epoch on the fixture (masks all 1)."""
    directory = tmp_path_factory.mktemp("bad_input_ldnet") / "run"
    overrides = {
        "trainer.num_epochs": 1,
        "trainer.callbacks": [{"type": "console_logger", "should_log_inputs": False}],
    }
    params = Params.from_file(
        str(CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet"),
        ext_vars=data_ext_vars,
        params_overrides=json.dumps(overrides),
    )
    train_model(params, str(directory))
    _start_predict_run(directory)
    return directory


def _start_predict_run(run: Path) -> None:
    inputs = run.parent / "predict_input.jsonl"
    inputs.write_text(PREDICT_INPUT, encoding="utf-8")
    output = run.parent / "predictions.jsonl"
    args: List[str] = [ALLENNLP, "predict", str(run / "model.tar.gz"), str(inputs)]
    args += ["--output-file", str(output), "--silent", "--include-package", "ldnet_allennlp"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    stderr = open(run.parent / "predict_stderr.txt", "w+", encoding="utf-8")
    process = subprocess.Popen(
        args, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True
    )
    _PREDICT_RUN.update(process=process, stderr=stderr, output=output)


def finished_predict_run():
    """(return code, stderr, output file) of the background `allennlp predict` run."""
    process = _PREDICT_RUN["process"]
    process.wait(timeout=600)
    stderr = _PREDICT_RUN["stderr"]
    stderr.seek(0)
    return process.returncode, stderr.read(), _PREDICT_RUN["output"]


@pytest.fixture(scope="session", autouse=True)
def _stop_predict_run():
    yield
    process = _PREDICT_RUN.get("process")
    if process is not None and process.poll() is None:  # its test was not selected
        process.kill()
        process.wait()
    if "stderr" in _PREDICT_RUN:
        _PREDICT_RUN["stderr"].close()
