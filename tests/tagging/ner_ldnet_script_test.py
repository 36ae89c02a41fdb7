"""
`bash scripts/ner_ldnet.sh CONLL03_DIR`, the README's one command for the LD-Net NER tagger,
run on the fixtures (named as in a CoNLL-03 copy) with the fixture dense LMs.
"""

import json
import os
import subprocess

from tests.cli import PROJECT_ROOT
from tests.conftest import FIXTURES_ROOT
from tests.lm.lm_archives import build_lm_archive_ext_vars


def run_script(args, env):
    return subprocess.run(
        ["bash", "scripts/ner_ldnet.sh", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )


def test_one_command_trains_evaluates_tags_and_skips_finished_steps(tmp_path):
    conll = tmp_path / "conll2003"
    conll.mkdir()
    for name, fixture in (("train", "train"), ("testa", "dev"), ("testb", "dev")):
        (conll / f"eng.{name}").symlink_to(FIXTURES_ROOT / "tagging" / f"conll2003_{fixture}.txt")
    env = {
        **build_lm_archive_ext_vars(tmp_path / "lms"),
        "NER_EPOCHS": "1",
        "NER_LDNET_DIR": str(tmp_path / "ner_ldnet"),
    }
    first = run_script([str(conll)], env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "allennlp train ner_ldnet_glove" in first.stdout
    metrics = json.loads((tmp_path / "ner_ldnet" / "test_metrics.json").read_text())
    assert 0.0 <= metrics["f1-measure-overall"] <= 1.0
    prediction = json.loads((tmp_path / "ner_ldnet" / "predictions.jsonl").read_text())
    assert prediction["tokens"][:2] == ["Maria", "Lopez"]
    assert len(prediction["tags"]) == len(prediction["tokens"])
    assert "spans" in prediction
    # re-running skips the finished training and only evaluates and tags again
    second = run_script([str(conll)], env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "allennlp train" not in second.stdout


def test_a_folder_without_eng_train_gets_the_usage(tmp_path):
    process = run_script([str(tmp_path)], {})
    assert process.returncode == 2
    assert "eng.train" in process.stderr
