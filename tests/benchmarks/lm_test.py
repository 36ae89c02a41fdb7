"""
`python -m benchmarks lm` without real data: the accelerated pre-training record is rebuilt from
the committed stage logs; the throughput stage runs on a tiny corpus; the pretrain stage
(allennlp stubbed) trains or resumes each direction after a start line in its log.
"""

import json
import sys

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.studies import lm

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def committed():
    return json.loads((harness_results.RESULTS_DIR / "lm.json").read_text())


def test_the_accelerated_pretraining_record_comes_from_the_stage_logs():
    results = committed()
    for direction in lm.DIRECTIONS:
        record = dict(results[f"pretrain_accelerated_{direction}"])
        record.pop("shipped_archive_dev_perplexity")
        assert lm.accelerated_pretraining(direction) == record


def test_the_headlines():
    lines = {line.key: line for line in lm.summary(committed())}
    ratio = lines["throughput_ratio_dense_over_allennlp_lstm"]
    assert ratio.goal == ">= 1x" and ratio.met is True
    assert lines["pretrained_forward_ppl_dev"].value == committed()["pretrained_forward_ppl_dev"]


def test_throughput_on_a_tiny_corpus(tmp_path, monkeypatch):
    words = "the a cat dog sat ran on under mat log".split()
    lines = [" ".join(words[(i + j) % 10] for j in range(3 + i % 4)) for i in range(40)]
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path)
    argv = ["lm", "--stage", "throughput", "--data", str(corpus), "--vocabulary", "none"]
    argv += ["--sentences", "40", "--batch-size", "4", "--warmup", "1", "--batches", "1"]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv, "--cutoffs", "5,10"])
    main()
    results = json.loads((tmp_path / "lm.json").read_text())
    runs = results["throughput_runs_tokens_per_sec"]
    assert set(runs) == {"dense", "allennlp_lstm"} and {len(v) for v in runs.values()} == {5}
    assert results["throughput_setup"]["rounds"] == 5
    ratio = results["tokens_per_sec_dense"] / results["tokens_per_sec_allennlp_lstm"]
    assert results["throughput_ratio_dense_over_allennlp_lstm"] == pytest.approx(ratio, rel=0.01)
    assert results["title"] == committed()["title"]
    assert results["throughput_command"].startswith("python -m benchmarks lm --stage throughput")
    assert "python -m benchmarks lm --stage pretrained" in results["command"]


def test_pretrain_trains_or_resumes_each_direction(tmp_path, monkeypatch):
    calls = []

    def fake_train(config, serialization_dir, log, overrides=None, env=None, threads=0):
        calls.append((config, serialization_dir.name, overrides, env, threads))
        return True

    monkeypatch.setattr(lm, "ROOT", tmp_path)
    monkeypatch.setattr(harness_allennlp, "train", fake_train)
    (tmp_path / "runs" / "lm_data").mkdir(parents=True)
    (tmp_path / "runs" / "lm_data" / "train.txt").write_text("a b\n")
    interrupted = tmp_path / "runs" / "lm_backward"
    interrupted.mkdir()
    (interrupted / "config.json").write_text(json.dumps({"trainer": {"num_epochs": 5}}))
    monkeypatch.setattr(sys, "argv", ["benchmarks", "lm", "--stage", "pretrain", "--epochs", "7"])
    main()
    assert sorted(calls) == [
        (f"training_configs/lm/dense_lm_{d}.jsonnet", f"lm_{d}", {"trainer.num_epochs": 7}, env, 1)
        for d in ("backward", "forward")
        for env in [
            {
                "LM_TRAIN_DATA_PATH": "runs/lm_data/train.txt",
                "LM_VALIDATION_DATA_PATH": "runs/lm_data/dev.txt",
            }
        ]
    ]
    assert json.loads((interrupted / "config.json").read_text())["trainer"]["num_epochs"] == 7
    log = (tmp_path / "runs" / "lm_backward.log").read_text()
    assert " start backward -> runs/lm_backward --recover" in log.splitlines()[0]
    assert (tmp_path / "runs" / "lm_forward.log").read_text().split()[1] == "start"


def test_more_text_records_each_run_from_its_logs(tmp_path):
    import argparse

    pack = tmp_path / "pack"
    pack.mkdir()
    facts = {"train_files": ["runs/lm_corpus_more/train.txt"], "train_tokens_with_boundaries": 9}
    held_out = {"dev_file": "d.txt", "extra_dev": {"wikinews": "w.txt"}}
    (pack / "pack.json").write_text(json.dumps(dict(facts, vocab_size=5, **held_out)))

    def log(direction, passes, held_out, resume):
        args = {"command": "train", "pack": str(pack), "direction": direction, "lr": 0.0005}
        args.update(fp16=True, recover=False, resume=resume)
        curve = [{"tokens_seen": 40, "seconds": 9.0, "dev_perplexity": 81.0}]
        return {
            "direction": direction, "args": args, "passes": passes, "device": "cpu",
            "dev_perplexity_start": 80.0, "best_dev_perplexity": 81.0, "curve": curve,
            "extra_dev_perplexity": held_out,
        }  # fmt: skip

    shipped, run = tmp_path / "shipped", tmp_path / "cont"
    for folder in (shipped, run):
        folder.mkdir()
    passes = [{"tokens": 30, "seconds": 3600.0}, {"tokens": 12, "seconds": 1800.0}]
    for direction in lm.DIRECTIONS:
        shipped_log = log(direction, [], {"wikinews": 150.004}, "s.th")
        (shipped / f"lm_{direction}.json").write_text(json.dumps(shipped_log))
        (run / f"lm_{direction}.json").write_text(
            json.dumps(log(direction, passes, {"wikinews": 130.456}, None))
        )
    one_direction = tmp_path / "news"
    one_direction.mkdir()
    (one_direction / "lm_forward.json").write_text(json.dumps(log("forward", passes, {}, None)))
    folders = [str(shipped), str(run), str(one_direction)]
    args = argparse.Namespace(more_text_runs=folders, more_text_probes=[])
    record = lm.more_text(args)["more_text"]
    assert record["pack"] == facts
    rows = {(row["run"], row["direction"]): row for row in record["runs"]}
    assert list(rows) == [(name, d) for name in ("shipped", "cont") for d in lm.DIRECTIONS] + [
        ("news", "forward")
    ]
    continued = rows[("cont", "forward")]
    assert continued["tokens_seen"] == 42 and continued["hours"] == 1.5
    assert continued["held_out_perplexity"] == {"wikinews": 130.46}
    assert continued["held_out_files"] == {"dev": "d.txt", "wikinews": "w.txt"}
    assert continued["commands"] == [
        f"python scripts/pretrain_lms_accelerated.py train --pack {pack} --direction forward "
        "--lr 0.0005 --fp16"
    ]
    shipped_row = rows[("shipped", "backward")]
    assert shipped_row["tokens_seen"] == 0 and shipped_row["held_out_perplexity"] == {
        "wikinews": 150.0
    }
    assert shipped_row["commands"][0].endswith("backward --lr 0.0005 --fp16 --resume s.th")
    # a recovered run: every process's command, the first one's first
    recovered = log("forward", passes, {}, None)
    recovered["args_history"] = [dict(recovered["args"], recover=False), dict(recovered["args"])]
    recovered["args_history"][1].update(recover=True, stop_after_seconds=0)
    commands = lm.continued_run(run, recovered)["commands"]
    assert commands[0].endswith("--fp16")
    assert commands[1].endswith("--fp16 --recover --stop-after-seconds 0")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="empty: no lm_forward.json or lm_backward.json"):
        lm.more_text(argparse.Namespace(more_text_runs=[str(empty)], more_text_probes=[]))


def test_the_ner_probes_of_the_runs_by_hand(monkeypatch):
    """`--more-text-probes FOLDER=LABEL`: a study run's dev F1 cut to 8 epochs and its mean over
    epochs 5 to 8; `shipped`: the recipe's own runs, every seed; an unknown label is named."""
    recipe = {"dev_f1_by_epoch": [80.0] * 4 + [90.0, 91.0, 92.0, 93.0, 99.0], "command": "c"}
    tagging = {
        "ner_ldnet_glove_sgd": recipe,
        "ner_ldnet_glove_sgd_seed2": dict(recipe, dev_f1_by_epoch=[85.0] * 8),
        "lm_study": {
            "ner_ldnet_glove_sgd_lm-more": {"dev_f1_by_epoch": [70.0] * 4 + [1.0] * 4},
            "ner_ldnet_glove_sgd_lm-news": {"dev_f1_by_epoch": [2.0] * 8},
            "ner_ldnet_glove_sgd_lm-news_seed2": {"dev_f1_by_epoch": [4.0] * 8},
            "ner_ldnet_glove_sgd_lm-newsy": {"dev_f1_by_epoch": [9.0] * 8},
        },
    }
    monkeypatch.setattr(lm, "load_results", lambda name: tagging if name == "tagging" else {})
    probes = lm.ner_probes(["runs/lm_shipped=shipped", "runs/lm_more=more"])
    assert [p["run"] for p in probes["lm_shipped"]] == [
        "ner_ldnet_glove_sgd",
        "ner_ldnet_glove_sgd_seed2",
    ]
    assert probes["lm_shipped"][0]["dev_f1_by_epoch"] == recipe["dev_f1_by_epoch"][:8]
    assert probes["lm_shipped"][0]["late_mean_dev_f1"] == 91.5
    assert probes["lm_shipped"][1]["late_mean_dev_f1"] == 85.0
    assert probes["lm_more"] == [
        {
            "run": "ner_ldnet_glove_sgd_lm-more",
            "command": None,
            "dev_f1_by_epoch": [70.0] * 4 + [1.0] * 4,
            "late_mean_dev_f1": 1.0,
        }
    ]
    # every seed of a label, and no other label that starts alike
    news = lm.ner_probes(["runs/lm_news=news"])["lm_news"]
    assert [(p["run"], p["late_mean_dev_f1"]) for p in news] == [
        ("ner_ldnet_glove_sgd_lm-news", 2.0),
        ("ner_ldnet_glove_sgd_lm-news_seed2", 4.0),
    ]
    with pytest.raises(SystemExit, match="no lm_study.ner_ldnet_glove_sgd_lm-gone"):
        lm.ner_probes(["runs/x=gone"])


def test_more_text_test_reads_test_once_for_the_taggers_chosen_on_dev(tmp_path, monkeypatch):
    """Per task, the final recipe's seed with the best dev F1 and the pruned run chosen on dev
    are evaluated on test (and nothing else, nothing on dev); the goal keys and headlines."""
    import argparse

    from benchmarks.studies import pruning_phase2

    def budget(task, chosen):
        rows = [
            {"run": f"{task}_b2", "dev_f1_pruned": 94.0},
            {"run": chosen, "dev_f1_pruned": 94.5},
        ]
        return {"rows": rows, "chosen_run_on_dev": chosen}

    results = {
        "tagging": {
            "lm_study": {
                "ner_ldnet_glove_sgd_lm-news": {"best_dev_f1": 94.16},
                "ner_ldnet_glove_sgd_lm-news_seed2": {"best_dev_f1": 94.3},
                "ner_ldnet_glove_sgd_lm-other": {"best_dev_f1": 99.0},
                "chunk_ldnet_glove_sgd_lm-news": {"best_dev_f1": 95.45},
            }
        },
        "pruning_budget": {
            "lm_study": {
                "ner_lm-news": budget("ner", "ner_b4"),
                # none within the loss allowed: the best pruned run on dev is taken
                "chunk_lm-news": {**budget("chunk", "chunk_b4"), "chosen_run_on_dev": None},
            }
        },
    }
    test_f1 = {
        "ner_ldnet_glove_sgd_lm-news_seed2/model.tar.gz": 90.8,
        "ner_b4_pruned.tar.gz": 90.5,
        "chunk_ldnet_glove_sgd_lm-news/model.tar.gz": 94.7,
        "chunk_b4_pruned.tar.gz": 95.1,
    }
    evaluated = []

    def fake_f1(archive, task, split, log):
        assert split == "test"
        name = "/".join(archive.parts[-2:]) if archive.name == "model.tar.gz" else archive.name
        evaluated.append((task, name))
        return test_f1[name]

    monkeypatch.setattr(lm, "load_results", lambda name: results[name])
    monkeypatch.setattr(pruning_phase2, "evaluated_f1", fake_f1)
    monkeypatch.setattr(lm, "ROOT", tmp_path)
    args = argparse.Namespace(more_text_label="news", more_text_pruning_out=str(tmp_path / "out"))
    figures = lm.more_text_test(args)
    assert [name for _, name in evaluated] == list(test_f1)
    assert figures["conll03_test_f1_ldnet_more_text"] == 90.8
    assert figures["conll03_test_f1_pruned_more_text"] == 90.5
    assert figures["conll00_test_f1_ldnet_more_text"] == 94.7
    assert figures["conll00_test_f1_pruned_more_text"] == 95.1
    taggers = figures["more_text_test"]["taggers"]
    assert [(t["run"], t["dev_f1"], t["test_f1"]) for t in taggers] == [
        ("ner_ldnet_glove_sgd_lm-news_seed2", 94.3, 90.8),
        ("ner_b4", 94.5, 90.5),
        ("chunk_ldnet_glove_sgd_lm-news", 95.45, 94.7),
        ("chunk_b4", 94.5, 95.1),
    ]
    lines = {line.key: line for line in lm.summary({**committed(), **figures})}
    assert lines["conll03_test_f1_ldnet_more_text"].met is False
    assert lines["conll03_test_f1_pruned_more_text"].goal == ">= 91"
    assert lines["conll00_test_f1_pruned_more_text"].met is True
    assert "conll00_test_f1_ldnet_more_text" not in lines  # no goal
    with pytest.raises(SystemExit, match="no ner runs of 'none' to choose from"):
        lm.more_text_test(argparse.Namespace(more_text_label="none", more_text_pruning_out="o"))
