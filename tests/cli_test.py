"""
`ldnet-allennlp` (`ldnet_allennlp/__main__.py`): AllenNLP's command line with this package
imported first, from a directory with no `.allennlp_plugins` and no `--include-package`.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"
EXPECTED = json.loads((FIXTURE_ARCHIVES / "expected_predictions.json").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent


def test_our_subcommands_and_components_work_from_any_directory(tmp_path):
    """
    From an empty directory: `ldnet-allennlp predict` loads one of our archives (registered
    model, reader, predictor) and predicts what it predicted when it was made, and
    `ldnet-allennlp ldnet-prune` (our subcommand) runs on it (and says that it is pruned already).
    (Plain `allennlp` there answers "invalid choice: 'ldnet-prune'".)
    """
    entry = EXPECTED["archives"]["ner_ldnet_pruned"]
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("".join(json.dumps(i) + "\n" for i in entry["inputs"]), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    archive = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    predict = [str(BIN / "ldnet-allennlp"), "predict", archive, str(inputs), "--silent"]
    predict += ["--output-file", str(tmp_path / "out.jsonl"), "--predictor", "ldnet_tagger"]
    process = subprocess.run(predict, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert process.returncode == 0, process.stderr[-2000:]
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["tags"] for line in lines] == [
        output["predictor"]["tags"] for output in entry["outputs"]
    ]

    prune = ["ldnet-prune", archive, "-o", str(tmp_path / "again.tar.gz")]
    process = subprocess.run(
        [str(BIN / "ldnet-allennlp"), *prune], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert process.returncode == 1, process.stderr[-2000:]
    assert "nothing to remove" in process.stderr and not (tmp_path / "again.tar.gz").exists()


def test_the_fixture_lm_config_trains_from_any_directory(tmp_path):
    """`fixtures/lm/dense_lm.jsonnet` finds its data next to itself (jsonnet's std.thisFile)."""
    from allennlp.common import Params

    config = FIXTURES_ROOT / "lm" / "dense_lm.jsonnet"
    assert Params.from_file(str(config))["train_data_path"] == str(
        FIXTURES_ROOT / "lm" / "lm_fixture_train.txt"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    train = [str(BIN / "ldnet-allennlp"), "train", str(config), "-s", str(tmp_path / "lm")]
    train += ["-o", json.dumps({"trainer.num_epochs": 1})]
    process = subprocess.run(train, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert process.returncode == 0, process.stderr[-2000:]
    assert (tmp_path / "lm" / "model.tar.gz").exists()
