"""
LM fine-tuning on the task's text (`python -m benchmarks lm_finetune`) without
training: `scripts/conll_to_lm_text.py --holdout` splits CoNLL-00 train.txt exactly as the
`ldnet_conll2000` reader does (so a fine-tuned LM never reads the chunkers' dev sentences), and
`lm_finetune_study` puts the fine-tuned-LM taggers beside the shipped-LM ones at equal epochs,
and the study's headlines come from the committed tables.
"""

import argparse
import json
import subprocess
import sys

import pytest

from benchmarks.harness.results import load_results
from benchmarks.studies import lm_variants as finetune
from benchmarks.studies import tagging_results
from benchmarks.studies.lm_finetune import STUDY
from ldnet_allennlp.tagging.dataset_readers import ValidatingConll2000DatasetReader
from scripts.conll_to_lm_text import convert
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT

CONLL00 = str(FIXTURES_ROOT / "tagging" / "conll2000_train.txt")


@pytest.mark.parametrize("holdout", [None, "exclude", "only"])
def test_lm_text_holds_out_the_readers_sentences(tmp_path, holdout):
    target = tmp_path / "text.txt"
    count = convert(CONLL00, str(target), holdout, holdout_every=4)
    lines = target.read_text().splitlines()
    reader = ValidatingConll2000DatasetReader(holdout=holdout, holdout_every=4)
    expected = [" ".join(t.text for t in i["tokens"].tokens) for i in reader.read(CONLL00)]
    assert lines == expected
    assert count == len(expected)
    everything = convert(CONLL00, str(tmp_path / "all.txt"))
    held_out = everything // 4  # every 4th sentence
    assert count == {None: everything, "exclude": everything - held_out, "only": held_out}[holdout]


def test_lm_text_command_line_refuses_a_holdout_every_below_two(tmp_path):
    script = PROJECT_ROOT / "scripts" / "conll_to_lm_text.py"
    command = [sys.executable, str(script), CONLL00, str(tmp_path / "t.txt")]
    done = subprocess.run(
        command + ["--holdout", "only", "--holdout-every", "1"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "--holdout-every must be >= 2, got 1" in done.stderr
    assert not (tmp_path / "t.txt").exists()


def run(dev):
    best = max(range(len(dev)), key=dev.__getitem__)
    return {"dev_f1_by_epoch": dev, "command": f"c{len(dev)}", "dev_f1": dev[best]}


def test_the_study_compares_fine_tuned_and_shipped_lms_at_equal_epochs(monkeypatch):
    results = {
        "recipe_search": {
            "chunk_ldnet_glove_sgd": run([90.0, 92.0, 93.0, 94.0]),
            "chunk_ldnet_glove_sgd_seed2": run([89.0, 91.0, 93.5, 93.9]),
            "chunk_vanilla_glove_sgd": run([1.0, 1.0, 1.0]),  # another recipe
        },
        "lm_study": {
            "chunk_ldnet_glove_sgd_lm-ft": run([91.0, 92.5, 93.2]),
            "chunk_ldnet_glove_sgd_lm-ft_seed2": run([90.0, 92.0, 93.1, 94.5]),
            "chunk_ldnet_glove_sgd_lm-pass1": run([1.0, 1.0, 1.0]),  # the passes study
        },
    }
    lms = {"forward": {"dev_perplexity_before": 109.1, "dev_perplexity_after": 88.1}}
    monkeypatch.setattr(finetune, "finetune_lms", {"chunk": lms}.get)
    args = argparse.Namespace(task="chunk")

    def study(command):
        sections = finetune.finetune_section(results, args, command)["lm_finetune_study"]
        assert list(sections) == ["chunk"]
        return sections["chunk"]

    record = study("python -m benchmarks lm_finetune x")
    assert record["epochs"] == 3  # the shortest fine-tuned run so far
    assert record["lms"] == lms and record["tagger"] == "chunk_ldnet_glove_sgd"
    rows = [(r["lms"], r["seed"], r["dev_f1_by_epoch"], r["best_dev_f1"]) for r in record["rows"]]
    assert rows == [
        ("fine-tuned", "2", [90.0, 92.0, 93.1], 93.1),
        ("fine-tuned", "default", [91.0, 92.5, 93.2], 93.2),
        ("shipped", "2", [89.0, 91.0, 93.5], 93.5),
        ("shipped", "default", [90.0, 92.0, 93.0], 93.0),
    ]
    assert record["commands"] == ["python -m benchmarks lm_finetune x"]
    # a later call adds its command once; --stage record (None) adds none
    results["lm_finetune_study"] = {"chunk": record}
    again = study(None)
    assert again["commands"] == ["python -m benchmarks lm_finetune x"]


def test_lm_record_reads_before_and_after_perplexity(tmp_path, monkeypatch):
    monkeypatch.setattr(finetune, "OUT", tmp_path)
    for direction, before in (("forward", 109.13), ("backward", 108.32)):
        out = tmp_path / f"chunk_{direction}"
        out.mkdir()
        metrics = {
            "best_epoch": 1,
            "epoch": 3,
            "training_duration": "0:03:27.612220",
            "best_validation_perplexity": 88.114,
        }
        (out / "metrics.json").write_text(json.dumps(metrics))
        (tmp_path / f"chunk_{direction}_before.json").write_text(json.dumps({"perplexity": before}))
    for name in ("conll00_train", "conll00_dev"):
        (tmp_path / f"{name}.txt").write_text("a b\n")
    record = finetune.finetune_lms("chunk")
    assert record["forward"] == {
        "dev_perplexity_before": 109.13,
        "dev_perplexity_after": 88.11,
        "best_epoch": 2,
        "epochs": 4,
        "seconds": 207.6,
    }
    assert record["backward"]["dev_perplexity_before"] == 108.32


def test_the_report_table_puts_each_rows_perplexity_beside_its_dev_f1():
    lms = {"dev_text": "runs/lm_finetune/conll00_dev.txt"}
    for direction, before, after in (("forward", 109.13, 88.11), ("backward", 108.32, 85.88)):
        lms[direction] = {"dev_perplexity_before": before, "dev_perplexity_after": after}
        lms[direction].update(best_epoch=2, epochs=4, seconds=207.6)
    study = {
        "lms": lms,
        "tagger": "chunk_ldnet_glove_sgd",
        "epochs": 4,
        "rows": [
            {
                "lms": "fine-tuned",
                "seed": "default",
                "dev_f1_by_epoch": [1, 2, 3, 5],
                "best_dev_f1": 5,
            },
            {
                "lms": "shipped",
                "seed": "default",
                "dev_f1_by_epoch": [1, 2, 2, 3],
                "best_dev_f1": 3,
            },
        ],
    }
    table = tagging_results.lm_finetune_table("chunk", study)
    assert table["rows"] == [
        ["fine-tuned", "default", [88.11, 85.88], [1, 2, 3, 5], 5, 4.0],
        ["shipped", "default", [109.13, 108.32], [1, 2, 2, 3], 3, 2.5],
    ]
    assert table["columns"][-1] == "mean dev F1, epochs 3-4"
    assert "held-out tenth of CoNLL-00 train.txt" in table["caption"]


def test_the_lm_override_keeps_the_configs_trainer(monkeypatch):
    from allennlp.common.params import Params

    from benchmarks.studies import lm

    override = json.dumps(lm.num_epochs(3))
    monkeypatch.setenv("FORWARD_LM_ARCHIVE", "lm.tar.gz")
    monkeypatch.setenv("LM_FINETUNE_TRAIN_PATH", "train.txt")
    monkeypatch.setenv("LM_FINETUNE_DEV_PATH", "dev.txt")
    config = PROJECT_ROOT / "training_configs" / "tagging" / "lm_finetune_forward.jsonnet"
    trainer = Params.from_file(str(config), override).as_dict()["trainer"]
    assert trainer["num_epochs"] == 3
    assert trainer["optimizer"] == {"type": "adam", "lr": 0.0005}
    assert trainer["validation_metric"] == "-perplexity" and trainer["grad_norm"] == 5


def test_the_headlines_are_the_committed_tables_late_means():
    results = load_results("tagging")
    lines = STUDY.summary(results)
    for task, study in results["lm_finetune_study"].items():
        expected = [
            tagging_results.late_mean(row["dev_f1_by_epoch"], study["epochs"])
            for row in study["rows"]
        ]
        assert [line.value for line in lines if line.figure.startswith(f"{task}:")] == expected


def test_the_train_stage_fine_tunes_both_lms_then_trains_the_tagger_on_them(tmp_path, monkeypatch):
    from benchmarks.__main__ import main
    from benchmarks.harness import allennlp as harness_allennlp

    trained, evaluated, commands = [], [], []

    def fake_train(config, serialization_dir, log, overrides=None, env=None, threads=0):
        trained.append((config, serialization_dir.name, overrides, env["LM_FINETUNE_DEV_PATH"]))
        return True

    def fake_evaluate(archive, data, output, log, overrides=None, env=None, threads=0):
        evaluated.append((archive.name, data, output.name))

    def fake_run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0)

    text = {"train": tmp_path / "train.txt", "dev": tmp_path / "dev.txt"}
    monkeypatch.setattr(finetune, "OUT", tmp_path)
    monkeypatch.setattr(finetune, "texts", lambda task: text)
    monkeypatch.setattr(harness_allennlp, "train", fake_train)
    monkeypatch.setattr(harness_allennlp, "evaluate", fake_evaluate)
    monkeypatch.setattr(subprocess, "run", fake_run)
    argv = ["lm_finetune", "--task", "chunk", "--epochs", "20", "--seed", "2", "--lm-epochs", "3"]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv, "--stage", "train"])
    main()
    assert sorted(trained) == [
        (
            f"training_configs/tagging/lm_finetune_{d}.jsonnet",
            f"chunk_{d}",
            {"trainer.num_epochs": 3},
            str(text["dev"]),
        )
        for d in ("backward", "forward")
    ]
    # the shipped LMs' perplexity on the same dev text, the "before" of the record
    assert evaluated == [
        (f"lm_{d}.tar.gz", str(text["dev"]), f"chunk_{d}_before.json")
        for d in ("forward", "backward")
    ]
    (command,) = commands
    assert command[1:5] == ["-m", "benchmarks", "tagging", "--runs"]
    assert command[5] == "chunk_ldnet_glove_sgd" and "--dev-only" in command
    assert (
        command[command.index("--lm-label") + 1] == "ft"
        and command[command.index("--seed") + 1] == "2"
    )
