"""
The `pruning_budget` study (the budget sweep of `benchmarks/studies/pruning.py`) without real
data: a shipped-style archive (fp16, LM weights referenced) laid out as a phase-1 directory starts
phase 2 from exactly that tagger; the budget override changes the budget and nothing else; the
dev choice of budget by hand; both stages end to end with `allennlp` stubbed.
"""

import json
from pathlib import Path
from typing import List

import pytest
import torch
from allennlp.common import Params
from allennlp.common.params import with_overrides
from allennlp.commands.train import train_model
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from benchmarks.__main__ import build_parser, run_study
from benchmarks.harness import allennlp as harness_allennlp
from benchmarks.harness import results as harness_results
from benchmarks.studies import pruning as bench
from benchmarks.studies import pruning_phase2 as phase2
from ldnet_allennlp.pruning.cut_layers import prune_archive
from tests.conftest import CONFIGS_ROOT, FIXTURES_ROOT
from tests.lm.lm_archives import lm_archive_ext_vars

TRAIN = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
DEV = str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt")
CHUNK = str(FIXTURES_ROOT / "tagging" / "conll2000_train.txt")


def ext_vars(phase1_dir=""):
    return {
        "CONLL03_TRAIN_DATA_PATH": TRAIN,
        "CONLL03_DEV_DATA_PATH": DEV,
        "CONLL03_TEST_DATA_PATH": DEV,
        "NER_LDNET_PHASE1_DIR": str(phase1_dir),
        "CONLL00_TRAIN_DATA_PATH": CHUNK,
        "CONLL00_TEST_DATA_PATH": CHUNK,
        **lm_archive_ext_vars(),
    }


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A phase-1 tagger on the fixtures, exported as pretrained/ ships taggers."""
    directory = tmp_path_factory.mktemp("phase1")
    params = Params.from_file(
        str(CONFIGS_ROOT / "tagging" / "ner_ldnet.jsonnet"), ext_vars=ext_vars()
    )
    params = Params(with_overrides(params.as_dict(quiet=True), {"trainer.num_epochs": 1}))
    train_model(params, str(directory / "run"))
    archive = directory / "shipped.tar.gz"
    prune_archive(
        str(directory / "run" / "model.tar.gz"),
        str(archive),
        fp16=True,
        reference_lms=True,
        keep_all_layers=True,
    )
    return archive


def test_phase2_starts_from_exactly_the_archived_tagger(shipped, tmp_path):
    phase1 = phase2.phase1_from_archive(shipped, tmp_path / "ner_phase1")
    assert (phase1 / "model.tar.gz").read_bytes() == shipped.read_bytes()
    weights = torch.load(phase1 / "best.th")
    assert any(".forward_lm._encoder." in name for name in weights)  # the LMs' too
    assert all(t.dtype != torch.float16 for t in weights.values())

    config = "training_configs/tagging/ner_ldnet_prune.jsonnet"
    params = Params.from_file(str(CONFIGS_ROOT.parent / config), ext_vars=ext_vars(phase1))
    # the phase-2 model, initialised from best.th by its `pretrained` initializer
    vocab = Vocabulary.from_files(str(phase1 / "vocabulary"))
    model = Model.from_params(vocab=vocab, params=params.pop("model")).eval()
    archived = load_archive(str(shipped)).model.eval()
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(DEV))[:4]
    batch = Batch(instances)
    batch.index_instances(vocab)
    tensors = batch.as_tensor_dict()
    with torch.no_grad():
        expected = archived(**tensors)["logits"]
        torch.testing.assert_close(model(**tensors)["logits"], expected, rtol=0, atol=0)
    # a second call keeps the directory as it is
    assert phase2.phase1_from_archive(shipped, tmp_path / "ner_phase1") == phase1


def test_the_budget_override_sets_the_budget_and_nothing_else(tmp_path):
    config = "training_configs/tagging/ner_ldnet_prune.jsonnet"
    overrides = json.loads(bench.budget_overrides(config, ext_vars(tmp_path), 5, 3))
    params = Params.from_file(str(CONFIGS_ROOT.parent / config), ext_vars=ext_vars(tmp_path))
    regexes = params.as_dict()["model"]["regularizer"]["regexes"]
    assert regexes[0][1]["budget"] == 2  # the config's
    regexes[0][1]["budget"] = 5
    assert overrides == {"model.regularizer.regexes": regexes, "trainer.num_epochs": 3}
    overridden = Params(with_overrides(params.as_dict(), overrides))
    assert overridden["model"]["regularizer"]["regexes"][0][1]["budget"] == 5
    with pytest.raises(SystemExit, match="no layer_selection regularizer"):
        bench.budget_overrides("training_configs/tagging/ner_ldnet.jsonnet", ext_vars(), 5, 3)


def test_chunkings_dev_is_the_held_out_tenth_of_its_training_file(tmp_path, monkeypatch):
    calls = []

    def evaluate(archive, data, output, log, overrides=None):
        calls.append((data, overrides, output.name))
        return {"f1-measure-overall": 0.9412}

    monkeypatch.setattr(harness_allennlp, "evaluate", evaluate)
    archive = tmp_path / "chunk_budget2_pruned.tar.gz"
    assert phase2.evaluated_f1(archive, "chunk", "dev", tmp_path / "log") == pytest.approx(94.12)
    phase2.evaluated_f1(archive, "chunk", "test", tmp_path / "log")
    phase2.evaluated_f1(archive, "ner", "dev", tmp_path / "log")
    chunk, ner = phase2.TASKS["chunk"]["data"], phase2.TASKS["ner"]["data"]
    train = chunk["CONLL00_TRAIN_DATA_PATH"]
    assert calls == [
        (
            train,
            {"validation_dataset_reader.holdout_path": train},
            archive.stem[:-4] + ".dev_metrics.json",
        ),
        (chunk["CONLL00_TEST_DATA_PATH"], None, archive.stem[:-4] + ".test_metrics.json"),
        (ner["CONLL03_DEV_DATA_PATH"], None, archive.stem[:-4] + ".dev_metrics.json"),
    ]


def test_the_chosen_run_is_the_smallest_budget_within_the_dev_loss():
    def row(run, budget, loss, within=True):
        return {"run": run, "budget": budget, "dev_f1_loss": loss, "within_budget": within}

    rows = [row("b2", 2, 1.1), row("b3", 3, 0.25, within=False), row("b4", 4, 0.3)]
    rows += [row("b6", 6, -0.1), row("b4_lr", 4, 0.1)]
    assert bench.chosen_run(rows, 0.3) == "b4_lr"  # b3 never ended within its budget
    assert bench.chosen_run(rows, 0.0) == "b6"
    assert bench.chosen_run(rows[:1], 0.3) is None


def test_the_tagger_lr_override_leaves_the_masks_lr(tmp_path):
    config = "training_configs/tagging/recipe/ner_ldnet_glove_sgd_prune_sticky.jsonnet"
    env = {**ext_vars(), "NER_LDNET_GLOVE_PHASE1_DIR": str(tmp_path)}
    overrides = json.loads(bench.budget_overrides(config, env, 4, 3, tagger_lr=0.006))
    assert overrides["trainer.optimizer.optimizers.default.lr"] == 0.006
    params = Params.from_file(str(CONFIGS_ROOT.parent / config), ext_vars=env)
    overridden = with_overrides(params.as_dict(), overrides)["trainer"]["optimizer"]
    assert overridden["optimizers"]["default"] == {"type": "sgd", "lr": 0.006, "momentum": 0.9}
    assert (
        overridden["optimizers"]["masks"]
        == params.as_dict()["trainer"]["optimizer"]["optimizers"]["masks"]
    )


def test_runs_that_differ_in_tagger_lr_or_epochs_train_into_their_own_directories():
    assert bench.run_name("ner", 2, None, 3) == "ner_budget2"
    assert bench.run_name("ner", 2, 0.006, 3) == "ner_budget2_lr0.006"
    assert bench.run_name("chunk", 4, 0.0077, 10) == "chunk_budget4_lr0.0077_ep10"
    assert bench.run_name("chunk", 4, None, 10) == "chunk_budget4_ep10"


def test_calls_side_by_side_keep_each_others_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(harness_results, "RESULTS_DIR", tmp_path)

    def row(run, budget, lr=None, epochs=3):
        return {
            "run": run,
            "budget": budget,
            "tagger_lr": lr,
            "epochs": epochs,
            "kept_layers_forward": [],
            "kept_layers_backward": [1],
            "within_budget": True,
            "dev_f1_loss": 0.5,
            "test_f1_pruned": 89.0,
            "test_f1_loss": 1.0,
            "flops_ratio": 4.0,
        }

    settings = {"dev_f1_unpruned": 94.0, "test_f1_unpruned": 90.0, "max_dev_loss": 0.3}
    # a row already saved by another call
    saved = {"ner": {"rows": [row("ner_budget2", 2)], "commands": ["first"]}}
    saved["summary"] = {"rows": []}  # a table such a file may hold: no key of the study's
    (tmp_path / "pruning_budget.json").write_text(json.dumps(saved))
    bench.save_budgets("ner", settings, {"ner_budget4": row("ner_budget4", 4)}, "call a")
    bench.save_budgets(
        "ner", settings, {"ner_budget2_lr0.006": row("ner_budget2_lr0.006", 2, 0.006)}, "call b"
    )
    bench.save_budgets("chunk", settings, {"chunk_budget2": row("chunk_budget2", 2)}, "call c")
    longer = row("ner_budget2_lr0.006_ep10", 2, 0.006, 10)
    bench.save_budgets("ner", settings, {"ner_budget2_lr0.006_ep10": longer}, "call d")
    saved = json.loads((tmp_path / "pruning_budget.json").read_text())
    assert [(r["run"], r["epochs"]) for r in saved["ner"]["rows"]] == [
        ("ner_budget2", 3),
        ("ner_budget2_lr0.006", 3),
        ("ner_budget2_lr0.006_ep10", 10),
        ("ner_budget4", 3),
    ]
    assert saved["ner"]["chosen_run_on_dev"] is None  # no row within max_dev_loss
    assert saved["ner"]["commands"] == ["first", "call a", "call b", "call d"]
    assert [r["run"] for r in saved["chunk"]["rows"]] == ["chunk_budget2"]
    assert "summary" not in saved  # the file's record is the rows


@pytest.mark.parametrize(
    "task, tagger_lr, budget, name",
    [
        ("ner", 0.006, 2, "ner_ldnet_glove_sgd_prune_sticky_lr"),
        ("chunk", 0.0077, 2, "chunk_ldnet_glove_sgd_prune_sticky_lr"),
        ("chunk", 0.0077, 4, "chunk_ldnet_glove_sgd_prune_sticky_lr_budget4"),
    ],
)
def test_the_lr_config_is_the_sticky_config_with_the_benchmarks_override(
    task, tagger_lr, budget, name, tmp_path
):
    """recipe/<name>.jsonnet is what the benchmark measured: the sticky config with
    `--tagger-lr` (0.006 for NER, 0.0077 for chunking), `--budgets` and `--epochs 10`."""
    env = {**ext_vars(), f"{task.upper()}_LDNET_GLOVE_PHASE1_DIR": str(tmp_path)}
    sticky = f"training_configs/tagging/recipe/{task}_ldnet_glove_sgd_prune_sticky.jsonnet"
    overrides = json.loads(bench.budget_overrides(sticky, env, budget, 10, tagger_lr=tagger_lr))
    measured = Params.from_file(str(CONFIGS_ROOT.parent / sticky), ext_vars=env).as_dict()
    measured = with_overrides(measured, overrides)
    config = CONFIGS_ROOT / "tagging" / "recipe" / f"{name}.jsonnet"
    assert Params.from_file(str(config), ext_vars=env).as_dict() == measured


def stub_pruning(tmp_path, monkeypatch, f1) -> List[str]:
    """`allennlp` (train, ldnet-prune), the F1 evaluation (`f1`: by archive name and split) and
    the timing stubbed; results written under `tmp_path`/results; a phase-1 run in
    `tmp_path`/phase1. Returns the list the stubbed `allennlp` calls are kept in."""
    results_dir = tmp_path / "results"
    monkeypatch.setattr(harness_results, "RESULTS_DIR", results_dir)
    phase1 = tmp_path / "phase1"
    phase1.mkdir()
    (phase1 / "model.tar.gz").write_text("")
    lm = {"forward_lm_archive": "fwd.tar.gz", "backward_lm_archive": "bwd.tar.gz"}
    config = {"model": {"text_field_embedder": {"token_embedders": {"lm": lm}}}}
    (phase1 / "config.json").write_text(json.dumps(config))
    calls = []

    def fake_allennlp(args, log, env=None, threads=0):
        calls.append(args[0])
        if args[0] == "train":
            out = tmp_path / args[args.index("-s") + 1]
            out.mkdir(parents=True)
            budget = json.loads(args[args.index("-o") + 1])["budget"]
            (out / "model.tar.gz").write_text("")
            metrics = {
                "best_validation_f1-measure-overall-within-budget": 0.9,
                "epoch": 1,
                "best_epoch": 1,
                "training_duration": "0:02:00",
            }
            (out / "metrics.json").write_text(json.dumps(metrics))
            for epoch, live in enumerate([budget + 2, budget]):
                epoch_metrics = {"validation_live_layers": live}
                (out / f"metrics_epoch_{epoch}.json").write_text(json.dumps(epoch_metrics))
        elif args[0] == "ldnet-prune":
            Path(args[args.index("-o") + 1]).write_text("")
            report = {
                "kept_layers_after": {"lm": {"forward": [], "backward": [1]}},
                "flops_per_token_before": 4.0e6,
                "flops_per_token_after": 1.0e6,
                "parameters_before": 10,
                "parameters_after": 5,
            }
            Path(args[args.index("--report-file") + 1]).write_text(json.dumps(report))
        else:
            raise AssertionError(args)

    def fake_f1(archive, task, split, log):
        assert task == "ner"
        return f1[(Path(archive).name, split)]

    def fake_speed(unpruned, pruned, sentences, repeats, batch1, spacy_too):
        speedup = {"ner_budget2_pruned.tar.gz": 3.0, "ner_budget4_pruned.tar.gz": 2.0}
        value = speedup[Path(pruned).name]
        return {
            "speedup_b32": value,
            "speedup_b1": value,
            "words_per_sec_pruned_b32": 1000 * value,
            "words_per_sec_unpruned_b32": 1000,
        }

    monkeypatch.setattr(harness_allennlp, "run_allennlp", fake_allennlp)
    monkeypatch.setattr(phase2, "evaluated_f1", fake_f1)
    monkeypatch.setattr(phase2, "speed", fake_speed)
    monkeypatch.setattr(bench, "read_sentences", lambda path: [["a"]])
    monkeypatch.setattr(
        bench,
        "budget_overrides",
        lambda config, env, budget, epochs, lr: json.dumps({"budget": budget}),
    )
    return calls


def test_the_main_loop_scores_each_budget_and_chooses_on_dev(tmp_path, monkeypatch):
    """
    Both stages end to end with `allennlp` stubbed: each budget's phase 2 and prune run once, the
    F1 losses are against the phase-1 tagger's, the run chosen on dev is the smallest budget
    within --max-dev-loss, and a later `--no-speed` call keeps the timing it did not redo.
    """
    import sys

    results_dir = tmp_path / "results"
    phase1 = tmp_path / "phase1"
    # dev / test F1 by archive: the phase-1 tagger, and budget 2 (too lossy) and 4 (within 0.3)
    f1 = {
        ("model.tar.gz", "dev"): 95.0,
        ("model.tar.gz", "test"): 91.0,
        ("ner_budget2_pruned.tar.gz", "dev"): 94.0,
        ("ner_budget2_pruned.tar.gz", "test"): 90.0,
        ("ner_budget4_pruned.tar.gz", "dev"): 94.8,
        ("ner_budget4_pruned.tar.gz", "test"): 90.9,
    }
    calls = stub_pruning(tmp_path, monkeypatch, f1)
    monkeypatch.chdir(tmp_path)
    argv = ["pruning_budget", "--task", "ner", "--config", "c.jsonnet"]
    argv += ["--phase1-dir", str(phase1), "--out", "out", "--budgets", "2", "4"]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    run_study(bench.BUDGET_STUDY, build_parser([bench.BUDGET_STUDY]).parse_args(argv))
    assert calls == ["train", "ldnet-prune"] * 2
    record = json.loads((results_dir / "pruning_budget.json").read_text())["ner"]
    rows = {row["run"]: row for row in record["rows"]}
    assert rows["ner_budget2"]["dev_f1_loss"] == 1.0 and rows["ner_budget2"]["test_f1_loss"] == 1.0
    assert rows["ner_budget4"]["dev_f1_loss"] == 0.2 and rows["ner_budget4"]["test_f1_loss"] == 0.1
    assert rows["ner_budget4"]["live_layers_by_epoch"] == [6, 4]
    assert rows["ner_budget4"]["flops_ratio"] == 4.0 and rows["ner_budget4"]["within_budget"]
    assert (
        rows["ner_budget2"]["speedup_b32"] == 3.0 and rows["ner_budget4"]["phase2_seconds"] == 120
    )
    assert record["chosen_run_on_dev"] == "ner_budget4"
    assert record["dev_f1_unpruned"] == 95.0 and record["test_f1_unpruned"] == 91.0
    # again with --no-speed: nothing retrained or pruned, the timing kept
    calls.clear()
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv, "--no-speed"])
    run_study(
        bench.BUDGET_STUDY, build_parser([bench.BUDGET_STUDY]).parse_args(argv + ["--no-speed"])
    )
    assert calls == []
    again = json.loads((results_dir / "pruning_budget.json").read_text())["ner"]
    assert again["rows"] == record["rows"]
    assert again["commands"] == [
        " ".join(["python -m benchmarks"] + argv),
        " ".join(["python -m benchmarks"] + argv + ["--no-speed"]),
    ]
    # each run's invocations are also kept beside it, for the pruning study's --phase2-dir
    assert json.loads((tmp_path / "out" / "ner_budget4_commands.json").read_text()) == (
        again["commands"]
    )


def test_the_committed_figures_render_to_the_headlines():
    committed = harness_results.load_results("pruning_budget")
    headlines = {h.key: h for h in bench.BUDGET_STUDY.summary(committed)}
    for task in ("ner", "chunk"):
        chosen = committed[task]["chosen_run_on_dev"]
        index = [row["run"] for row in committed[task]["rows"]].index(chosen)
        loss = headlines[f"{task}.rows[{index}].dev_f1_loss"]
        assert loss.met is (loss.value <= committed[task]["max_dev_loss"])
    assert len(headlines) == 12


def test_the_cli_names_both_studies():
    from benchmarks.studies import all_studies
    from benchmarks.studies.pruning_budget import STUDY

    assert STUDY is bench.BUDGET_STUDY
    names = [study.name for study in all_studies()]
    assert names[names.index("pruning") + 1] == "pruning_budget"


def test_an_lm_label_scores_dev_only_and_keeps_apart(tmp_path, monkeypatch):
    """With --lm-label (a phase 1 on other LMs) the budgets are trained and pruned as always,
    scored on dev only (the stub has no test F1, so reading test would fail) and untimed, and
    their rows go under lm_study.<task>_lm-<label>, leaving the task's own record alone."""
    import sys

    results_dir = tmp_path / "results"
    results_dir.mkdir()
    shipped = {"ner": {"rows": [], "dev_f1_unpruned": 94.0}, "title": "t"}
    (results_dir / "pruning_budget.json").write_text(json.dumps(shipped))
    f1 = {("model.tar.gz", "dev"): 95.0, ("ner_budget2_pruned.tar.gz", "dev"): 94.9}
    calls = stub_pruning(tmp_path, monkeypatch, f1)
    monkeypatch.setattr(phase2, "speed", lambda *args: pytest.fail("timed"))
    monkeypatch.chdir(tmp_path)
    argv = ["pruning_budget", "--task", "ner", "--config", "c.jsonnet", "--lm-label", "news"]
    argv += ["--phase1-dir", str(tmp_path / "phase1"), "--out", "out", "--budgets", "2"]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    run_study(bench.BUDGET_STUDY, build_parser([bench.BUDGET_STUDY]).parse_args(argv))
    assert calls == ["train", "ldnet-prune"]
    results = json.loads((results_dir / "pruning_budget.json").read_text())
    assert results["ner"] == shipped["ner"]
    record = results["lm_study"]["ner_lm-news"]
    assert record["dev_f1_unpruned"] == 95.0 and "test_f1_unpruned" not in record
    (row,) = record["rows"]
    assert row["dev_f1_pruned"] == 94.9 and row["dev_f1_loss"] == 0.1
    assert not any(key.startswith(("test", "speed", "words")) for key in row)
    assert record["chosen_run_on_dev"] == "ner_budget2"
    assert bench.budget_record(results, "ner", "news") == record
