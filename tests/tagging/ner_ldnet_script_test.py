"""
`bash scripts/ner_ldnet.sh CONLL03_DIR`, docs/training.md's one command for the LD-Net NER tagger,
run on the fixtures (named as in a CoNLL-03 copy) with the fixture dense LMs.
"""

import json
import os
import subprocess

from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate

import ldnet_allennlp  # noqa: F401
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
    assert "allennlp train recipe/ner_ldnet_glove_sgd" in first.stdout
    # the script's test F1 is the archive's on eng.testb, as AllenNLP's evaluate computes it
    metrics = json.loads((tmp_path / "ner_ldnet" / "test_metrics.json").read_text())
    archive = load_archive(str(tmp_path / "ner_ldnet" / "model.tar.gz"))
    loader = SimpleDataLoader(
        list(archive.validation_dataset_reader.read(str(conll / "eng.testb"))), batch_size=8
    )
    loader.index_with(archive.model.vocab)
    expected = evaluate(archive.model, loader)["f1-measure-overall"]
    assert metrics["f1-measure-overall"] == expected
    assert f"test F1 {100 * expected:.2f}" in first.stdout
    prediction = json.loads((tmp_path / "ner_ldnet" / "predictions.jsonl").read_text())
    assert prediction["tokens"][:2] == ["Maria", "Lopez"]
    assert len(prediction["tags"]) == len(prediction["tokens"])
    assert "spans" in prediction
    # re-running skips the finished training and only evaluates and tags again
    second = run_script([str(conll)], env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "allennlp train" not in second.stdout
    # a run stopped before its last epoch leaves the archive of its best epoch so far, without
    # metrics.json: re-running resumes it instead of evaluating that archive as if finished
    out = tmp_path / "ner_ldnet"
    assert list(out.glob("training_state_e*"))
    (out / "metrics.json").unlink()
    third = run_script([str(conll)], env)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "--recover" in third.stdout and "stopped before its last epoch" in third.stdout
    assert (out / "model_interrupted.tar.gz").exists() and (out / "metrics.json").exists()


def test_a_folder_without_eng_train_gets_the_usage(tmp_path):
    process = run_script([str(tmp_path)], {})
    assert process.returncode == 2
    assert "eng.train" in process.stderr
