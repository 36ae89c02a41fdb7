"""`allennlp ldnet-distill-transfer-set`: content, determinism, resume after a kill, errors."""

import json
import os
import signal

import pytest
from allennlp.commands.train import train_model_from_file
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
from ldnet_allennlp.distillation.classification.dataset_readers import TransferSetReader
from ldnet_allennlp.distillation.classification.transfer_set import (
    build_transfer_set,
    length_sorted,
    transfer_set_rows,
)
from ldnet_allennlp.distillation.transfer_set import SORT_WINDOW_BATCHES
from tests.cli import run_allennlp
from tests.distillation.conftest import DISTILLATION_FIXTURES
from tests.training.sigkill import KILL_AFTER_FORWARDS_VARIABLE

SST2_TRAIN = str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_train.tsv")
RULES = AugmentationRules(p_mask=0.2, p_pos=0.2, p_ng=0.25, n_iter=3)


@pytest.fixture(scope="module")
def teacher(teacher_archive):
    archive = load_archive(teacher_archive)
    return archive.model, archive.validation_dataset_reader


def build(teacher, output, **kwargs):
    model, reader = teacher
    options = dict(rules=RULES, seed=13, batch_size=4, max_examples=12)
    options.update(kwargs)
    return build_transfer_set(model, reader, SST2_TRAIN, str(output), **options)


@pytest.fixture(scope="module")
def uninterrupted(teacher, tmp_path_factory):
    output = tmp_path_factory.mktemp("transfer") / "full.jsonl"
    build(teacher, output)
    return output


def read_rows(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0])["transfer_set"], [json.loads(line) for line in lines[1:]]


def test_content(uninterrupted):
    header, rows = read_rows(uninterrupted)
    assert header["teacher_labels"] in (["0", "1"], ["1", "0"])
    assert header["n_iter"] == 3 and header["seed"] == 13
    originals = [r for r in rows if not r["augmented"]]
    augmented = [r for r in rows if r["augmented"]]
    # the 12 originals are kept with their gold labels; augmented rows carry none
    assert len({r["sentence"] for r in originals}) == len(originals) <= 12
    assert all("label" in r for r in originals) and not any("label" in r for r in augmented)
    assert 0 < len(augmented) <= 12 * 3
    texts = [r["sentence"] for r in rows]
    assert len(texts) == len(set(texts))  # deduplicated
    assert all(len(r["teacher_logits"]) == 2 for r in rows)
    assert any("[MASK]" in t for t in texts)
    # the student reader accepts it
    assert len(list(TransferSetReader().read(str(uninterrupted)))) == len(rows)


def test_rows_are_written_by_length_within_windows(teacher, uninterrupted):
    """The file holds exactly `transfer_set_rows`' rows; its window (here all of them: 400 rows
    at batch size 4) is in order of text length, so that each batch pads little."""
    header, rows = read_rows(uninterrupted)
    assert header["length_sorted_window"] == SORT_WINDOW_BATCHES * 4
    model, reader = teacher
    examples = [(texts, label) for _, texts, label in reader.read_examples(SST2_TRAIN)][:12]
    unsorted = transfer_set_rows(examples, RULES, 13)
    assert len(rows) < header["length_sorted_window"]
    assert sorted(map(json.dumps, unsorted)) == sorted(
        json.dumps({k: v for k, v in row.items() if k != "teacher_logits"}) for row in rows
    )
    lengths = [len(row["sentence"]) for row in rows]
    assert lengths == sorted(lengths) and unsorted != [
        {k: v for k, v in row.items() if k != "teacher_logits"} for row in rows
    ]


def test_length_sorted_keeps_every_row_in_its_window():
    rows = [{"sentence": "x" * n, "example": i} for i, n in enumerate([5, 1, 3, 3, 9, 2, 7])]
    pairs = [{"premise": "aaa", "hypothesis": "b"}, {"premise": "a", "hypothesis": "bb"}]
    ordered = length_sorted(rows, 3)
    # windows [5, 1, 3], [3, 9, 2], [7]; equal lengths keep their order
    assert [row["example"] for row in ordered] == [1, 2, 0, 5, 3, 4, 6]
    assert length_sorted(rows, 100) == sorted(rows, key=lambda row: len(row["sentence"]))
    assert length_sorted(pairs, 2) == pairs[::-1]  # a pair's length is both texts'


def test_deterministic(teacher, uninterrupted, tmp_path):
    build(teacher, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == uninterrupted.read_bytes()
    build(teacher, tmp_path / "seed14.jsonl", seed=14)
    assert (tmp_path / "seed14.jsonl").read_bytes() != uninterrupted.read_bytes()


def test_resume_after_interruption_equals_uninterrupted(teacher, uninterrupted, tmp_path):
    model, _ = teacher
    output = tmp_path / "resumed.jsonl"
    original_forward = model.forward
    calls = {"count": 0}

    def dying_forward(**kwargs):
        calls["count"] += 1
        if calls["count"] > 3:
            raise KeyboardInterrupt  # killed while labelling batch 4
        return original_forward(**kwargs)

    model.forward = dying_forward
    try:
        with pytest.raises(KeyboardInterrupt):
            build(teacher, output)
    finally:
        del model.forward
    header, rows = read_rows(output)
    assert len(rows) == 3 * 4  # three complete batches survived
    with open(output, "a", encoding="utf-8") as handle:
        handle.write('{"sentence": "half a li')  # and a line cut mid-write
    build(teacher, output)
    assert output.read_bytes() == uninterrupted.read_bytes()
    build(teacher, output)  # resuming a finished file changes nothing
    assert output.read_bytes() == uninterrupted.read_bytes()


def test_resume_after_sigkill_of_the_command(teacher, teacher_archive, tmp_path):
    """
    The real `allennlp ldnet-distill-transfer-set` process killed with SIGKILL while the teacher
    labels its 4th batch (tests/training/sigkill.py), then the same build resumed: the three
    complete batches are kept and the result is the uninterrupted one, byte for byte.
    """
    output = tmp_path / "killed.jsonl"
    arguments = [SST2_TRAIN, str(output), "--n-iter", "3", "--p-mask", "0.2", "--p-pos", "0.2"]
    arguments += ["--p-ng", "0.25", "--max-examples", "12", "--batch-size", "4", "--seed", "13"]
    killed = run_allennlp(
        ["ldnet-distill-transfer-set", teacher_archive, *arguments]
        + ["--include-package", "tests.training.sigkill"],
        env={KILL_AFTER_FORWARDS_VARIABLE: "3", "OMP_NUM_THREADS": "1"},
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    _, rows = read_rows(output)
    assert len(rows) == 3 * 4
    # the command's settings (its header names the teacher archive)
    teacher_name = os.path.abspath(teacher_archive)
    build(teacher, output, teacher_name=teacher_name)
    build(teacher, tmp_path / "uninterrupted.jsonl", teacher_name=teacher_name)
    assert output.read_bytes() == (tmp_path / "uninterrupted.jsonl").read_bytes()


def test_resume_with_other_settings_is_refused(teacher, uninterrupted, tmp_path):
    output = tmp_path / "copy.jsonl"
    output.write_bytes(uninterrupted.read_bytes())
    with pytest.raises(ConfigurationError, match=r"other settings \(\['seed'\]\)"):
        build(teacher, output, seed=99)


def test_gold_label_outside_the_teacher_vocabulary(teacher, tmp_path):
    model, reader = teacher
    path = tmp_path / "labels.tsv"
    path.write_text("sentence\tlabel\na good film \t1\na dull film \tneutral\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"labels.tsv, line 3: gold label 'neutral'"):
        build_transfer_set(model, reader, str(path), str(tmp_path / "out.jsonl"), RULES)


def test_teacher_predictor(teacher_archive):
    predictor = Predictor.from_archive(load_archive(teacher_archive), "distillation_classifier")
    assert predictor.predict("a good film")["label"] in ("0", "1")


@pytest.mark.parametrize("name", ["ldnet-distill-transfer-set", "distill-transfer-set"])
def test_cli_command_is_registered_and_its_old_name_warns(name, teacher_archive, tmp_path):
    output = tmp_path / "cli.jsonl"
    process = run_allennlp(
        [name, teacher_archive, SST2_TRAIN, str(output)]
        + ["--n-iter", "1", "--max-examples", "4", "--batch-size", "8"],
        env={"DISTILLATION_FIXTURES": str(DISTILLATION_FIXTURES), "OMP_NUM_THREADS": "1"},
    )
    header, rows = read_rows(output)
    assert header["n_iter"] == 1 and 4 <= len(rows) <= 8
    deprecated = "`allennlp distill-transfer-set` is deprecated and will be removed"
    assert (deprecated in process.stderr) == (name == "distill-transfer-set")


def test_pair_teacher_transfer_set_student_and_predict(tmp_path):
    """The three steps on the pair fixtures (in process), then the student's default predictor."""
    teacher_dir, student_dir = tmp_path / "teacher", tmp_path / "student"
    train_model_from_file(str(DISTILLATION_FIXTURES / "teacher_sick.jsonnet"), str(teacher_dir))
    archive = load_archive(str(teacher_dir / "model.tar.gz"))
    transfer = tmp_path / "sick_aug.jsonl"
    sick_train = str(DISTILLATION_FIXTURES / "sick" / "sick_fixture.txt") + "#SemEval_set=TRAIN"
    rules = AugmentationRules(n_iter=2)
    build_transfer_set(
        archive.model, archive.validation_dataset_reader, sick_train, str(transfer), rules
    )
    header, rows = read_rows(transfer)
    assert sorted(header["teacher_labels"]) == ["CONTRADICTION", "ENTAILMENT", "NEUTRAL"]
    assert all(len(r["teacher_logits"]) == 3 and "premise" in r for r in rows)
    overrides = json.dumps(
        {"train_data_path": str(transfer), "validation_data_path": str(transfer)}
    )
    train_model_from_file(
        str(DISTILLATION_FIXTURES / "student_sick.jsonnet"), str(student_dir), overrides=overrides
    )
    predictor = Predictor.from_archive(load_archive(str(student_dir / "model.tar.gz")))
    prediction = predictor.predict_json(
        {"premise": "A man is eating", "hypothesis": "A man is not eating"}
    )
    assert prediction["label"] in ("CONTRADICTION", "ENTAILMENT", "NEUTRAL")
    assert len(prediction["probs"]) == 3
