"""
Bad input for the package's subcommands, `allennlp ldnet-prune` and `allennlp
ldnet-distill-transfer-set`, run through AllenNLP's own command-line entry point in this process
(`allennlp.commands.main`: the argument parsing and code path of the `allennlp` executable,
without the cost of a new interpreter). Every refusal leaves an existing output file as it was,
byte for byte, and no partial file next to it. Last, `allennlp predict` with bad input lines
through the real command line (a subprocess, started in the background by `conftest.py`).
"""

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from allennlp.commands import main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

import ldnet_allennlp.pruning.cut_layers as export
from ldnet_allennlp.distillation.classification.augmentation import AugmentationRules
from ldnet_allennlp.distillation.classification.transfer_set import build_transfer_set
from ldnet_allennlp.distillation.classification.dataset_readers import DistillationTsvReader
from ldnet_allennlp.pruning.cut_layers import write_archive
from tests.bad_input.conftest import LONG_SENTENCE, TRICKY_TOKENS, finished_predict_run
from tests.conftest import FIXTURES_ROOT

SST2_TRAIN = FIXTURES_ROOT / "distillation" / "sst2" / "sst2_fixture_train.tsv"
GOOD = b"a good archive from an earlier run\n"


def allennlp(monkeypatch, *args: str) -> None:
    """`allennlp <args>` through AllenNLP's entry point, in this process."""
    monkeypatch.setattr(sys, "argv", ["allennlp", *args])
    main(prog="allennlp")


def untouched(path: Path, content: bytes) -> bool:
    partials = list(path.parent.glob(path.name + ".partial*"))
    return path.read_bytes() == content and not partials


@pytest.fixture(scope="module")
def ldnet_archive(ldnet_run):
    return load_archive(str(ldnet_run / "model.tar.gz"))


def masked_archive(archive, path: Path, mask) -> str:
    """The trained LD-Net tagger with its layer masks set to `mask`, as an archive."""
    layer_mask = archive.model.text_field_embedder.token_embedder_lm.layer_mask
    original = layer_mask.detach().clone()
    with torch.no_grad():
        layer_mask.copy_(torch.tensor(mask))
    write_archive(archive.config.as_dict(quiet=True), archive.model, str(path))
    with torch.no_grad():
        layer_mask.copy_(original)
    return str(path)


# -- ldnet-prune ---------------------------------------------------------------------------------


def prune_inputs(ldnet_run, ldnet_archive, lm_archives, tmp_path):
    text = tmp_path / "notes.tar.gz"
    text.write_text("not an archive")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes((ldnet_run / "model.tar.gz").read_bytes()[:2000])
    return {
        "not an archive": (str(text), "notes.tar.gz could not be loaded as an AllenNLP model"),
        "truncated archive": (str(truncated), "truncated.tar.gz could not be loaded as"),
        "missing archive": (str(tmp_path / "nope.tar.gz"), "nope.tar.gz could not be loaded"),
        "LM archive (wrong kind)": (lm_archives["forward"], "has no layer_selection embedder"),
        "nothing pruned (masks all 1)": (str(ldnet_run / "model.tar.gz"), "nothing to remove"),
        "every layer removed (masks all 0)": (
            masked_archive(ldnet_archive, tmp_path / "zeros.tar.gz", [[0.0] * 3, [0.0] * 3]),
            "every layer mask of both LMs is 0",
        ),
    }


def test_ldnet_prune_refusals_name_the_input_and_keep_the_good_output(
    ldnet_run, ldnet_archive, lm_archives, tmp_path, monkeypatch
):
    output = tmp_path / "pruned.tar.gz"
    output.write_bytes(GOOD)
    inputs = prune_inputs(ldnet_run, ldnet_archive, lm_archives, tmp_path)
    for case, (archive, message) in inputs.items():
        with pytest.raises(ConfigurationError, match=message):
            allennlp(monkeypatch, "ldnet-prune", archive, "-o", str(output))
        assert untouched(output, GOOD), case
    with pytest.raises(ConfigurationError, match="is a directory"):
        allennlp(monkeypatch, "ldnet-prune", str(ldnet_run / "model.tar.gz"), "-o", str(tmp_path))


def test_ldnet_prune_failing_while_writing_keeps_the_good_output(
    ldnet_archive, tmp_path, monkeypatch
):
    masked = masked_archive(ldnet_archive, tmp_path / "masked.tar.gz", [[1, 0, 1], [0, 1, 1]])
    copyfile = shutil.copyfile
    output = tmp_path / "pruned.tar.gz"
    output.write_bytes(GOOD)

    def disk_full(source, destination):
        Path(destination).write_bytes(Path(source).read_bytes()[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export.shutil, "copyfile", disk_full)
    with pytest.raises(OSError, match="No space left on device"):
        allennlp(monkeypatch, "ldnet-prune", masked, "-o", str(output))
    assert untouched(output, GOOD)
    monkeypatch.setattr(export.shutil, "copyfile", copyfile)
    allennlp(monkeypatch, "ldnet-prune", masked, "-o", str(output))  # and then it works
    assert load_archive(str(output)).model is not None


# -- ldnet-distill-transfer-set ------------------------------------------------------------------


@pytest.fixture(scope="module")
def stub_teacher():
    """An untrained `basic_classifier` over the SST-2 fixture: a teacher with logits, fast."""
    reader = DistillationTsvReader()
    vocab = Vocabulary.from_instances(reader.read(str(SST2_TRAIN)))
    params = {
        "type": "basic_classifier",
        "text_field_embedder": {"token_embedders": {"tokens": {"embedding_dim": 4}}},
        "seq2vec_encoder": {"type": "boe", "embedding_dim": 4},
    }
    return Model.from_params(vocab=vocab, params=Params(params)), reader


def build(teacher, input_file, output, **kwargs):
    model, reader = teacher
    options = dict(rules=AugmentationRules(n_iter=0), seed=13, batch_size=2, max_examples=6)
    options.update(kwargs)
    return build_transfer_set(model, reader, str(input_file), str(output), **options)


def test_transfer_set_output_that_is_not_a_transfer_set_is_left_alone(stub_teacher, tmp_path):
    good = tmp_path / "good.jsonl"
    rows = build(stub_teacher, SST2_TRAIN, good)
    assert rows == 6
    lines = good.read_bytes().splitlines(keepends=True)
    outputs = {
        # the training file given as the output by mistake (arguments swapped)
        "train.tsv": (SST2_TRAIN.read_bytes(), "train.tsv, line 1: expected the header"),
        "binary.jsonl": (b"\xff\xfe\x00garbage\n", "binary.jsonl, line 1: expected the header"),
        "other_seed.jsonl": (good.read_bytes(), r"other settings \(\['seed'\]\)"),
        "edited.jsonl": (
            b"".join(lines[:2] + [b'{"sentence": "cut\n'] + lines[3:]),
            "edited.jsonl, line 3: a complete line that is not a JSON row",
        ),
    }
    for name, (content, message) in outputs.items():
        output = tmp_path / name
        output.write_bytes(content)
        with pytest.raises(ConfigurationError, match=message):
            build(stub_teacher, SST2_TRAIN, output, seed=14 if name == "other_seed.jsonl" else 13)
        assert untouched(output, content), name


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty; expected a header line"),
        (b"sentence\tlabel\n", "has no data rows"),
        (b"text\tlabel\nfine film\t1\n", "line 2: no column 'sentence'"),
        (b"sentence\tlabel\ngood\tmaybe\n", "line 2: gold label 'maybe' is not in the teacher"),
    ],
    ids=["empty", "header-only", "wrong-columns", "unknown-label"],
)
def test_transfer_set_bad_input_files(stub_teacher, tmp_path, content, message):
    input_file = tmp_path / "input.tsv"
    input_file.write_bytes(content)
    output = tmp_path / "out.jsonl"
    with pytest.raises(ConfigurationError, match=message):
        build(stub_teacher, input_file, output)
    assert not output.exists()


@pytest.mark.parametrize(
    "option, message",
    [({"batch_size": 0}, "batch_size must be >= 1"), ({"max_examples": 0}, "max_examples")],
)
def test_transfer_set_bad_sizes(stub_teacher, tmp_path, option, message):
    with pytest.raises(ConfigurationError, match=message):
        build(stub_teacher, SST2_TRAIN, tmp_path / "out.jsonl", **option)
    assert not (tmp_path / "out.jsonl").exists()


def test_distill_transfer_set_command_line_refusals(ldnet_run, tmp_path, monkeypatch):
    output = tmp_path / "out.jsonl"
    args = [
        "ldnet-distill-transfer-set",
        str(ldnet_run / "model.tar.gz"),
        str(SST2_TRAIN),
        str(output),
    ]
    for option, message in [
        (["--n-iter", "-1"], "n_iter must be >= 0"),
        (["--p-mask", "1.5"], "p_mask must be in"),
        (["--p-mask", "0.6", "--p-pos", "0.6"], "p_mask \\+ p_pos must be <= 1"),
    ]:
        with pytest.raises(ConfigurationError, match=f"distill-transfer-set: {message}"):
            allennlp(monkeypatch, *args, *option)
    # a tagger archive is the wrong kind of teacher
    with pytest.raises(ConfigurationError, match="must be a 'distillation_tsv' reader"):
        allennlp(monkeypatch, *args)
    assert not output.exists()


# -- allennlp predict ----------------------------------------------------------------------------


def test_allennlp_predict_skips_blank_lines_and_stops_at_invalid_json(ldnet_run):
    """
    Through the real command line (`conftest.PREDICT_INPUT`): AllenNLP's `predict` skips blank
    lines itself (no output line, documented in docs/bad_inputs.md); a line that is not JSON ends
    the run with our error, which quotes it and counts the non-blank lines before it, and no
    frame of torch is in the traceback. The lines before it were predicted and written.
    """
    returncode, stderr, output = finished_predict_run()
    assert returncode != 0
    last_line = stderr.strip().splitlines()[-1]
    assert last_line.startswith("allennlp.common.checks.ConfigurationError: input line 4 (not")
    assert "is not valid JSON" in last_line and "Maria visited Berlin" in last_line
    traceback = stderr[stderr.index("Traceback") :]
    assert "site-packages/torch" not in traceback
    predictions = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [p["tokens"] for p in predictions] == [["Paris"], TRICKY_TOKENS, LONG_SENTENCE]
    assert [len(p["tags"]) for p in predictions] == [1, len(TRICKY_TOKENS), 2000]
