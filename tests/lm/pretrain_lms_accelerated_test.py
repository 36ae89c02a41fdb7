"""
`scripts/pretrain_lms_accelerated.py` on the fixture LM text: pack -> train (plain torch) ->
archive gives an ordinary `dense_language_model` archive whose AllenNLP perplexity on the dev
text equals the one the plain-torch loop logged, in both directions.
"""

import json
import subprocess
import sys

import pytest

from allennlp.data import DatasetReader
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate

from tests.cli import PROJECT_ROOT
from tests.conftest import FIXTURES_ROOT

SCRIPT = str(PROJECT_ROOT / "scripts" / "pretrain_lms_accelerated.py")
TRAIN = str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt")
DEV = str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt")
CONLL = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")


def run(*args):
    process = subprocess.run(
        [sys.executable, SCRIPT, *args], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert process.returncode == 0, process.stdout + process.stderr
    return process.stdout


@pytest.fixture(scope="module")
def pack_dir(tmp_path_factory):
    pack = tmp_path_factory.mktemp("pack")
    run(
        "pack", "--train", TRAIN, "--train-conll", CONLL, "--dev", DEV, "--min-count", "1",
        "--output", str(pack),
    )  # fmt: skip
    facts = json.loads((pack / "pack.json").read_text())
    # fixture-sized model (the real config's cut-offs exceed the fixture vocabulary)
    for settings in facts["model_settings"].values():
        settings["encoder"].update(input_size=6, hidden_size=4, num_layers=3)
        settings.update(projection_dim=16, cutoffs=[10, 20])
    (pack / "pack.json").write_text(json.dumps(facts))
    return pack


def test_pack_reads_conll_words_not_conll_lines(pack_dir):
    facts = json.loads((pack_dir / "pack.json").read_text())
    lm_lines = sum(1 for line in open(TRAIN) if line.strip())
    conll_sentences, in_sentence = 0, False
    for line in open(CONLL):
        word = line.split()[0] if line.split() else None
        if word and word != "-DOCSTART-" and not in_sentence:
            conll_sentences += 1
        in_sentence = bool(word) and word != "-DOCSTART-"
    assert facts["train_sentences"] == lm_lines + conll_sentences
    vocabulary = (pack_dir / "vocabulary" / "tokens.txt").read_text().split("\n")
    assert "<S>" in vocabulary and "</S>" in vocabulary
    assert "B-ORG" not in vocabulary and "NNP" not in vocabulary  # no tag columns read as words


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_trained_weights_archive_and_score_as_logged(pack_dir, tmp_path, direction):
    out = tmp_path / "out"
    run(
        "train", "--pack", str(pack_dir), "--direction", direction, "--passes", "2",
        "--batch-size", "8", "--output", str(out),
    )  # fmt: skip
    log = json.loads((out / f"lm_{direction}.json").read_text())
    archive_path = tmp_path / "model.tar.gz"
    run(
        "archive", "--pack", str(pack_dir), "--weights", str(out / f"lm_{direction}.th"),
        "--direction", direction, "--train-data-path", TRAIN,
        "--validation-data-path", DEV, "--output", str(archive_path),
    )  # fmt: skip
    archive = load_archive(str(archive_path))
    assert archive.model.direction == direction
    reader = DatasetReader.from_params(archive.config["dataset_reader"].duplicate())
    loader = SimpleDataLoader(list(reader.read(DEV)), batch_size=4)
    loader.index_with(archive.model.vocab)
    metrics = evaluate(archive.model, loader)
    assert metrics["perplexity"] == pytest.approx(log["best_dev_perplexity"], rel=1e-4)


def test_zero_passes_keeps_the_seeded_initialisation(pack_dir, tmp_path):
    # the "0 passes" LM of the lm_passes study: no step taken, same seed -> same LM
    import torch

    states = []
    for out in (tmp_path / "a", tmp_path / "b"):
        run(
            "train", "--pack", str(pack_dir), "--direction", "forward", "--passes", "0",
            "--seed", "5", "--output", str(out),
        )  # fmt: skip
        log = json.loads((out / "lm_forward.json").read_text())
        assert log["passes"] == [] and log["best_dev_perplexity"] == log["dev_perplexity_start"]
        states.append(torch.load(out / "lm_forward.th"))
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    # a different seed initialises differently: the file is the initialisation, not a constant
    run(
        "train", "--pack", str(pack_dir), "--direction", "forward", "--passes", "0",
        "--seed", "6", "--output", str(tmp_path / "c"),
    )  # fmt: skip
    other = torch.load(tmp_path / "c" / "lm_forward.th")
    assert not all(torch.equal(states[0][k], other[k]) for k in states[0])


def test_held_out_sets_curve_fp16_and_a_stop_inside_a_pass(tmp_path):
    import torch

    pack = tmp_path / "pack"
    run(
        "pack", "--train", TRAIN, "--dev", DEV, "--min-count", "1",
        "--extra-dev", f"conll={conll_text(tmp_path)}", "--extra-dev", f"again={DEV}",
        "--output", str(pack),
    )  # fmt: skip
    facts = json.loads((pack / "pack.json").read_text())
    assert sorted(facts["extra_dev"]) == ["again", "conll"]
    for settings in facts["model_settings"].values():
        settings["encoder"].update(input_size=6, hidden_size=4, num_layers=3)
        settings.update(projection_dim=16, cutoffs=[10, 20])
    (pack / "pack.json").write_text(json.dumps(facts))
    out = tmp_path / "out"
    run(
        "train", "--pack", str(pack), "--direction", "forward", "--passes", "3",
        "--batch-size", "4", "--eval-every-tokens", "40", "--fp16", "--curve-held-out",
        "--output", str(out),
    )  # fmt: skip
    log = json.loads((out / "lm_forward.json").read_text())
    state = torch.load(out / "lm_forward.th")
    assert {value.dtype for value in state.values() if value.is_floating_point()} == {torch.float16}
    # the best of every evaluation, mid-pass ones included, is the one kept
    assert len(log["curve"]) > len(log["passes"]) == 3
    assert log["best_dev_perplexity"] == min(point["dev_perplexity"] for point in log["curve"])
    # --curve-held-out: every point scores the held-out sets too (the dev text itself as dev)
    for point in log["curve"]:
        assert sorted(point["held_out_perplexity"]) == ["again", "conll"]
        assert point["held_out_perplexity"]["again"] == pytest.approx(point["dev_perplexity"])
    seen = [point["tokens_seen"] for point in log["curve"]]
    assert seen == sorted(seen) and seen[-1] == sum(entry["tokens"] for entry in log["passes"])
    # the dev text itself, as a held-out set, scores the best LM's dev perplexity (in fp16)
    assert log["extra_dev_perplexity"]["again"] == pytest.approx(
        log["best_dev_perplexity"], rel=1e-2
    )
    assert log["extra_dev_perplexity"]["conll"] != log["extra_dev_perplexity"]["again"]
    # no passes: the starting LM scored on every held-out set (how a shipped LM is scored)
    run(
        "train", "--pack", str(pack), "--direction", "forward", "--passes", "0",
        "--output", str(tmp_path / "start"),
    )  # fmt: skip
    start = json.loads((tmp_path / "start" / "lm_forward.json").read_text())
    assert start["extra_dev_perplexity"]["again"] == pytest.approx(start["dev_perplexity_start"])
    # a stop inside the first pass: one partial pass, fewer tokens than a whole pass
    run(
        "train", "--pack", str(pack), "--direction", "forward", "--passes", "3",
        "--batch-size", "2", "--stop-after-seconds", "0", "--output", str(tmp_path / "stop"),
    )  # fmt: skip
    stopped = json.loads((tmp_path / "stop" / "lm_forward.json").read_text())
    assert len(stopped["passes"]) == 1 and stopped["passes"][0]["partial"] is True
    # without --curve-held-out, a point is dev perplexity only
    assert stopped["curve"] and all("held_out_perplexity" not in p for p in stopped["curve"])
    assert 0 < stopped["passes"][0]["tokens"] < log["passes"][0]["tokens"]


def conll_text(tmp_path):
    """The CoNLL fixture's words as LM text (one sentence per line)."""
    lines, words = [], []
    for line in open(CONLL):
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                lines.append(" ".join(words))
            words = []
        else:
            words.append(parts[0])
    path = tmp_path / "conll_text.txt"
    path.write_text("\n".join(lines + ([" ".join(words)] if words else [])) + "\n")
    return path


def script():
    """The script as a module, so that the recovery tests run it in this process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pretrain_lms_accelerated", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_state(pack_dir, out, *extra):
    """Trains 2 passes (saving the state after every batch); the state at the end."""
    import torch

    script().main([
        "train", "--pack", str(pack_dir), "--direction", "backward", "--passes", "2",
        "--batch-size", "24", "--eval-every-tokens", "100", "--save-state-every-seconds", "1e-9",
        "--output", str(out), *extra,
    ])  # fmt: skip
    return torch.load(out / "training_state_backward.pt", weights_only=False), None


def test_recover_continues_exactly_where_a_stop_left_off(pack_dir, tmp_path):
    import torch

    whole, _ = train_state(pack_dir, tmp_path / "whole")
    assert whole["progress"]["pass"] == 2 and whole["progress"]["batch"] == 0
    # the same run stopped after every batch (at a stop the state is saved), then recovered
    stopped = tmp_path / "stopped"
    state, _ = train_state(pack_dir, stopped, "--stop-after-seconds", "0")
    assert (state["progress"]["pass"], state["progress"]["batch"]) == (0, 1)
    processes = 1
    while state["progress"]["pass"] < 2:
        state, _ = train_state(pack_dir, stopped, "--stop-after-seconds", "0", "--recover")
        processes += 1
    # three batches a pass, a stop after each batch inside a pass
    assert processes == 5
    # the same weights, Adam moments and learning rate as the run that never stopped
    assert all(torch.equal(whole["model"][k], state["model"][k]) for k in whole["model"])
    moments = [
        (whole["optimizer"]["state"][i], state["optimizer"]["state"][i])
        for i in whole["optimizer"]["state"]
    ]
    assert all(torch.equal(a["exp_avg_sq"], b["exp_avg_sq"]) for a, b in moments)
    assert (
        whole["optimizer"]["param_groups"][0]["lr"] == state["optimizer"]["param_groups"][0]["lr"]
    )
    # the same passes logged (the stops' partial entries are not kept in the state)
    same = ("tokens", "train_perplexity", "dev_perplexity", "lr", "partial")
    assert [{k: e[k] for k in same} for e in whole["passes"]] == [
        {k: e[k] for k in same} for e in state["passes"]
    ]
    # every evaluation of the run without stops is in the recovered run's curve too
    points = {(p["tokens_seen"], p["dev_perplexity"]) for p in state["curve"]}
    assert {(p["tokens_seen"], p["dev_perplexity"]) for p in whole["curve"]} <= points
    log = json.loads((stopped / "lm_backward.json").read_text())
    assert log["best_dev_perplexity"] == min(p["dev_perplexity"] for p in state["curve"])
    # the arguments of every process, the first one's first
    assert [args["recover"] for args in log["args_history"]] == [False] + [True] * (processes - 1)


def test_recover_refuses_a_missing_state_another_setting_and_an_overwrite(pack_dir, tmp_path):
    out = tmp_path / "out"
    base = ["train", "--pack", str(pack_dir), "--direction", "forward", "--passes", "1"]
    base += ["--batch-size", "24"]
    main = script().main
    with pytest.raises(SystemExit) as refused:
        main([*base, "--recover", "--output", str(out)])
    assert f"no training state {out / 'training_state_forward.pt'}" in str(refused.value)
    main([*base, "--stop-after-seconds", "0", "--output", str(out)])
    for extra, message in [
        (["--lr", "0.01", "--recover"], "--lr is 0.01, but"),
        ([], "training_state_forward.pt exists: continue that run with --recover"),
    ]:
        with pytest.raises(SystemExit) as refused:
            main([*base, *extra, "--output", str(out)])
        assert message in str(refused.value)


def test_a_training_state_gives_its_last_weights_to_archive_and_resume(pack_dir, tmp_path):
    """`archive --weights` and `train --resume` take a run's training state as its last weights
    (the model in it), as they take a state dict."""
    import torch

    state, _ = train_state(pack_dir, tmp_path / "run", "--stop-after-seconds", "0")
    state_file = tmp_path / "run" / "training_state_backward.pt"
    module = script()
    weights = module.lm_weights(str(state_file), "cpu")
    assert weights.keys() == state["model"].keys()
    assert all(torch.equal(weights[k], state["model"][k]) for k in weights)
    plain = tmp_path / "plain.th"
    torch.save(state["model"], plain)
    again = module.lm_weights(str(plain), "cpu")
    assert all(torch.equal(again[k], state["model"][k]) for k in again)
    archive = tmp_path / "lm_backward.tar.gz"
    module.main([
        "archive", "--pack", str(pack_dir), "--direction", "backward", "--weights",
        str(state_file), "--output", str(archive),
    ])  # fmt: skip
    model = load_archive(str(archive)).model
    archived = model.state_dict()
    assert all(torch.equal(archived[k], state["model"][k]) for k in state["model"])
    resumed = tmp_path / "resumed"
    module.main([
        "train", "--pack", str(pack_dir), "--direction", "backward", "--passes", "0",
        "--resume", str(state_file), "--output", str(resumed),
    ])  # fmt: skip
    kept = torch.load(resumed / "lm_backward.th")
    assert all(torch.equal(kept[k], state["model"][k]) for k in state["model"])
