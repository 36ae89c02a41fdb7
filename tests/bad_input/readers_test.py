"""
Bad input for the dataset readers `dense_lm_text`, `distillation_tsv` and
`distillation_transfer_set` (the CoNLL readers': `tests/tagging/dataset_readers/conll_test.py`).

The property tests (hypothesis, derandomized: the same examples on every run) write random files
-- tokens of printable, Unicode, control and emoji characters, random column counts, blank and
`-DOCSTART-` lines, CRLF endings, lines of bytes that are not UTF-8 -- and check that each file
either reads into instances whose tokens equal the tokens written, or raises our
`ConfigurationError` naming the file and the first bad line. The cases after them are the fixed
bad inputs of `docs/bad_inputs.md` that the readers' own tests do not already cover.
"""

import json
import logging
import re

import pytest
from allennlp.common.checks import ConfigurationError
from hypothesis import event, given
from hypothesis import strategies as st

from ldnet_allennlp.distillation.classification.dataset_readers import (
    DistillationTsvReader,
    TransferSetReader,
)
from ldnet_allennlp.lm.dataset_readers.dense_lm_text import DenseLMTextDatasetReader
from tests.bad_input.strategies import NOT_UTF8, PROPERTY, text, write

# -- LM text -------------------------------------------------------------------------------------

LM_SEPARATORS = [" ", "\t", "  ", "\x1c", "\u3000", "\xa0", "\x0b"]


@st.composite
def lm_files(draw):
    lines, sentences, first_bad = [], [], None
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 14)) == 0:
            lines.append(NOT_UTF8)
            first_bad = first_bad or len(lines)
            continue
        words = draw(st.lists(text(exclude="\n\r\ufeff", max_size=4), max_size=5))
        separator = draw(st.sampled_from(LM_SEPARATORS))
        line = separator.join(words)
        lines.append(line.encode())
        if line.split():
            sentences.append(["<S>"] + line.split() + ["</S>"])
    return lines, sentences, first_bad


@PROPERTY
@given(lm_files(), st.sampled_from([b"\n", b"\r\n"]))
def test_lm_text_reads_whitespace_tokens_or_names_the_bad_line(tmp_path, file, newline):
    lines, sentences, first_bad = file
    path = write(tmp_path / "lm.txt", lines, newline)
    read = lambda: [  # noqa: E731
        [t.text for t in i["source"].tokens] for i in DenseLMTextDatasetReader().read(path)
    ]
    event("parsed" if first_bad is None and sentences else "error")
    if first_bad is not None:
        with pytest.raises(ConfigurationError, match=f"lm.txt, line {first_bad}: bytes that"):
            read()
    elif not sentences:
        with pytest.raises(ConfigurationError, match="lm.txt is empty"):
            read()
    else:
        assert read() == sentences


def test_lm_text_bom_long_sentence_and_counted_drops(tmp_path, caplog):
    long = " ".join(f"w{i}" for i in range(2000))
    path = tmp_path / "lm.txt"
    path.write_text("\ufeffone\n" + long + "\nshort 🙂 line\n", encoding="utf-8")
    instances = list(DenseLMTextDatasetReader().read(str(path)))
    assert [len(i["source"].tokens) for i in instances] == [3, 2002, 5]
    assert instances[0]["source"].tokens[1].text == "one"  # the BOM is not part of the word
    with caplog.at_level(logging.WARNING):
        kept = list(DenseLMTextDatasetReader(max_sequence_length=10).read(str(path)))
    assert len(kept) == 2
    assert "Dropped 1 sentences longer than 10 from" in caplog.text


# -- distillation TSV ----------------------------------------------------------------------------

TSV_CELL = text(exclude="\t\n\r\ufeff", min_size=0, max_size=5)


@st.composite
def tsv_files(draw):
    lines, examples, first_bad = [b"sentence\tlabel"], [], None
    for _ in range(draw(st.integers(0, 5))):
        line_number = len(lines) + 1
        if draw(st.integers(0, 14)) == 0:
            lines.append(NOT_UTF8)
            first_bad = first_bad or (line_number, "bytes that are not valid UTF-8")
            continue
        width = draw(st.sampled_from([2, 2, 2, 2, 1, 3]))
        cells = draw(st.lists(TSV_CELL, min_size=width, max_size=width))
        line = "\t".join(cells)
        lines.append(line.encode())
        if not line.strip():
            continue  # a blank line
        if width != 2:
            first_bad = first_bad or (line_number, f"{width} tab-separated columns")
        elif not cells[0].strip():
            first_bad = first_bad or (line_number, "empty sentence")
        else:
            examples.append((cells[0].split(), cells[1].strip()))
    return lines, examples, first_bad


@PROPERTY
@given(tsv_files(), st.sampled_from([b"\n", b"\r\n"]))
def test_tsv_reads_the_sentences_written_or_names_the_bad_line(tmp_path, file, newline):
    lines, examples, first_bad = file
    path = write(tmp_path / "data.tsv", lines, newline)

    def read():
        return [
            ([t.text for t in i["tokens"].tokens], i["label"].label)
            for i in DistillationTsvReader().read(path)
        ]

    event(first_bad[1] if first_bad else "parsed" if examples else "no rows")
    if first_bad is not None:
        line_number, what = first_bad
        with pytest.raises(ConfigurationError, match=rf"data.tsv, line {line_number}: {what}"):
            read()
    elif not examples:
        with pytest.raises(ConfigurationError, match="data.tsv has no data rows"):
            read()
    else:
        assert read() == examples


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        (b"sentence\tlabel\n", "", "has no data rows"),
        (b"sentence\tsplit\tlabel\na b\tdev\t1\n", "#split=train", "has no data rows"),
        (b"", "", "is empty; expected a header line"),
    ],
    ids=["header-only", "filter-matches-nothing", "empty"],
)
def test_tsv_without_rows(tmp_path, content, suffix, message):
    path = tmp_path / "rows.tsv"
    path.write_bytes(content)
    with pytest.raises(ConfigurationError, match=f"rows.tsv{re.escape(suffix)} {message}"):
        list(DistillationTsvReader().read(str(path) + suffix))


# -- transfer set --------------------------------------------------------------------------------


@st.composite
def transfer_sets(draw):
    labels = ["0", "1", "2"][: draw(st.integers(2, 3))]
    lines = [json.dumps({"transfer_set": {"teacher_labels": labels}}).encode()]
    examples, first_bad = [], None
    for _ in range(draw(st.integers(0, 4))):
        line_number = len(lines) + 1
        kind = draw(st.sampled_from(["ok"] * 6 + ["count", "json", "object", "nan", "number"]))
        sentence = draw(text(exclude="", min_size=0, max_size=6))
        count = len(labels) + (draw(st.sampled_from([-1, 1])) if kind == "count" else 0)
        logits = draw(st.lists(st.floats(-50, 50), min_size=count, max_size=count))
        row = {"sentence": sentence, "teacher_logits": logits}
        if kind == "nan":
            row["teacher_logits"] = [float("nan")] * len(labels)
        if kind == "number":
            row["sentence"] = 7
        encoded = json.dumps(row, ensure_ascii=draw(st.booleans()))
        if kind == "json":
            encoded = encoded[:-1]
        if kind == "object":
            encoded = json.dumps([row])
        lines.append(encoded.encode())
        what = {
            "count": f"{count} teacher_logits, but the header lists {len(labels)}",
            "json": "not valid JSON",
            "object": "a row must be a JSON object",
            "nan": "teacher_logits must be finite numbers",
            "number": "the sentence is not a string",
        }.get(kind)
        if what is None and not sentence.strip():
            what = "empty sentence"
        if what is not None:
            first_bad = first_bad or (line_number, what)
        else:
            examples.append((sentence.split(), logits))
    return lines, examples, first_bad


@PROPERTY
@given(transfer_sets())
def test_transfer_set_reads_the_rows_written_or_names_the_bad_line(tmp_path, file):
    lines, examples, first_bad = file
    path = write(tmp_path / "transfer.jsonl", lines, b"\n")

    def read():
        return [
            ([t.text for t in i["tokens"].tokens], i["teacher_logits"].tensor.tolist())
            for i in TransferSetReader().read(path)
        ]

    event(first_bad[1].split(",")[0] if first_bad else "parsed" if examples else "no rows")
    if first_bad is not None:
        line_number, what = first_bad
        with pytest.raises(
            ConfigurationError, match=rf"transfer.jsonl, line {line_number}: {what}"
        ):
            read()
    elif not examples:
        with pytest.raises(ConfigurationError, match="transfer.jsonl has a header but no examples"):
            read()
    else:
        got = read()
        assert [tokens for tokens, _ in got] == [tokens for tokens, _ in examples]
        for (_, got_logits), (_, logits) in zip(got, examples):
            assert got_logits == pytest.approx(logits, rel=1e-6, abs=1e-6)


def test_transfer_set_empty_file_and_unknown_gold_label(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(ConfigurationError, match="empty.jsonl is empty; expected a transfer-set"):
        list(TransferSetReader().read(str(empty)))
    header = json.dumps({"transfer_set": {"teacher_labels": ["0", "1"]}})
    row = json.dumps({"sentence": "a good film", "label": "positive", "teacher_logits": [0, 1]})
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(header + "\n" + row + "\n")
    with pytest.raises(
        ConfigurationError, match="labelled.jsonl, line 2: gold label 'positive' is not one of"
    ):
        list(TransferSetReader().read(str(labelled)))
