"""
Bad input for every dataset reader of the package (`ldnet_conll2003`, `ldnet_conll2000`,
`dense_lm_text`, `distillation_tsv`, `distillation_transfer_set`).

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
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_utils.span_utils import InvalidTagSequence, to_bioul
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ldnet_allennlp.distillation.dataset_readers import DistillationTsvReader, TransferSetReader
from ldnet_allennlp.lm.dataset_readers.dense_lm_text import DenseLMTextDatasetReader
from ldnet_allennlp.tagging.dataset_readers import (
    ValidatingConll2000DatasetReader,
    ValidatingConll2003DatasetReader,
)

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Characters that broke, or could break, a reader: C0/C1 controls, Unicode spaces that Python's
# str.split() splits on (U+001C..U+001F, U+0085, U+00A0, U+2028, U+3000), zero-width and
# bidi characters, emoji with modifiers, combining marks, CJK.
SPECIAL = [
    "\x00", "\x01", "\x0b", "\x0c", "\x1b", "\x1c", "\x1f", "\x7f", "\x85", "\xa0",
    "\u2028", "\u200b", "\u202e", "\u3000", "🙂", "👍🏽", "日本", "é", "e\u0301",
]  # fmt: skip
NOT_UTF8 = b"\xff\xfe caf\xe9 \x80"


def text(exclude: str, min_size: int = 1, max_size: int = 6):
    """Strings of SPECIAL pieces and arbitrary UTF-8 characters, without those in `exclude`."""
    piece = st.one_of(
        st.sampled_from([s for s in SPECIAL if not set(s) & set(exclude)]),
        st.characters(codec="utf-8", exclude_characters=exclude),
    )
    return st.lists(piece, min_size=min_size, max_size=max_size).map("".join)


def write(path: Path, lines: List[bytes], newline: bytes) -> str:
    path.write_bytes(b"".join(line + newline for line in lines))
    return str(path)


# -- CoNLL ---------------------------------------------------------------------------------------

CONLL_FORMATS = {
    "conll2003": (ValidatingConll2003DatasetReader, 4, "-DOCSTART- -X- -X- O", "ner"),
    "conll2000": (ValidatingConll2000DatasetReader, 3, "-DOCSTART- -X- O", "chunk"),
}
# a column: no spaces, tabs or line ends (the format's separators), no BOM (dropped at the start)
CONLL_COLUMN = text(exclude=" \t\r\n\ufeff")


@st.composite
def conll_files(draw, num_columns: int, docstart: str):
    """
    `(lines, sentences, first_bad)`: the file's lines (bytes), the expected `(tokens, tags)` of
    every sentence, and `(line_number, kind)` of the first bad line, if any.
    """
    lines: List[bytes] = []
    sentences = []
    first_bad: Optional[Tuple[int, str]] = None
    if draw(st.booleans()):
        lines += [docstart.encode(), b""]
    for _ in range(draw(st.integers(0, 3))):
        tokens, tags = [], []
        for _ in range(draw(st.integers(1, 4))):
            width = draw(
                st.sampled_from([num_columns] * 30 + [1, num_columns - 1, num_columns + 1])
            )
            if draw(st.integers(0, 39)) == 0:
                lines.append(NOT_UTF8)
                first_bad = first_bad or (len(lines), "bytes")
                continue
            columns = draw(st.lists(CONLL_COLUMN, min_size=width, max_size=width))
            separator = draw(st.sampled_from([" ", "\t", "  ", " \t "]))
            lead = draw(st.sampled_from(["", " ", "\t"]))
            lines.append((lead + separator.join(columns)).encode())
            if width != num_columns:
                first_bad = first_bad or (len(lines), "columns")
            else:
                tokens.append(columns[0])
                tags.append(columns[-1])
        if tokens:
            sentences.append((tokens, tags))
        lines.append(draw(st.sampled_from([b"", b"   ", b"\t"])))
    return lines, sentences, first_bad


def instances_of(reader, path):
    return [
        ([t.text for t in instance["tokens"].tokens], list(instance["tags"].labels))
        for instance in reader.read(path)
    ]


@pytest.mark.parametrize("name", sorted(CONLL_FORMATS))
@PROPERTY
@given(data=st.data(), newline=st.sampled_from([b"\n", b"\r\n"]))
def test_conll_reads_the_tokens_written_or_names_the_bad_line(name, tmp_path, data, newline):
    reader_class, num_columns, docstart, tag_label = CONLL_FORMATS[name]
    reader = reader_class(tag_label=tag_label)
    lines, sentences, first_bad = data.draw(conll_files(num_columns, docstart))
    path = write(tmp_path / "random.conll", lines, newline)
    if first_bad is not None:
        line_number, kind = first_bad
        what = "bytes that are not valid UTF-8" if kind == "bytes" else "expected"
        event(f"error: {kind}")
        with pytest.raises(ConfigurationError, match=rf"random.conll, line {line_number}: {what}"):
            instances_of(reader, path)
    elif not sentences:
        event("no sentences")
        with pytest.raises(ConfigurationError, match="random.conll has no sentences"):
            instances_of(reader, path)
    else:
        event("parsed")
        assert instances_of(reader, path) == sentences


GOOD_TAGS = ["O", "B-PER", "I-PER", "I-LOC", "B-LOC", "I-MISC"]
TAGS = GOOD_TAGS * 4 + ["I-", "B-", "PER", "X-PER", "Inc"]


def first_bad_tag(tags: List[str], encoding: str) -> Optional[int]:
    """Index of the first tag that is malformed or cannot follow the one before it."""
    for index, tag in enumerate(tags):
        if not re.fullmatch(r"O|[BI]-.+", tag):
            return index
    for end in range(1, len(tags) + 1):
        try:
            to_bioul(tags[:end], encoding=encoding)
        except InvalidTagSequence:
            return end - 1
    return None


@pytest.mark.parametrize("name, encoding", [("conll2003", "IOB1"), ("conll2000", "BIO")])
@PROPERTY
@given(tags=st.lists(st.sampled_from(TAGS), min_size=1, max_size=6))
def test_tags_convert_to_bioul_or_name_the_bad_tag_line(name, encoding, tmp_path, tags):
    reader_class, num_columns, _, tag_label = CONLL_FORMATS[name]
    reader = reader_class(tag_label=tag_label, convert_to_coding_scheme="BIOUL")
    # line 1 is a good sentence; the random one starts on line 3 (its tags in the last column)
    good = "Paris NNP " + ("I-NP I-LOC" if num_columns == 4 else "B-NP")
    middle = " O " if num_columns == 4 else " "
    rows = [f"w{i} NN{middle}{tag}" for i, tag in enumerate(tags)]
    path = tmp_path / "tags.conll"
    path.write_text("\n".join([good, ""] + rows) + "\n", encoding="utf-8")
    bad = first_bad_tag(tags, encoding)
    event("parsed" if bad is None else "bad tag")
    if bad is None:
        assert instances_of(reader, str(path))[1][1] == to_bioul(tags, encoding=encoding)
    else:
        with pytest.raises(ConfigurationError, match=rf"tags.conll, line {3 + bad}: "):
            instances_of(reader, str(path))


@pytest.mark.parametrize("name", sorted(CONLL_FORMATS))
@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "has no sentences"),
        (b"\n\n  \n", "has no sentences"),
        (b"{D}\n\n{D}\n\n", "has no sentences"),
    ],
    ids=["empty", "blank-lines", "only-docstart"],
)
def test_conll_files_without_sentences(name, content, message, tmp_path):
    reader_class, _, docstart, _ = CONLL_FORMATS[name]
    path = tmp_path / "nothing.conll"
    path.write_bytes(content.replace(b"{D}", docstart.encode()))
    with pytest.raises(ConfigurationError, match=f"nothing.conll {message}"):
        list(reader_class().read(str(path)))


@pytest.mark.parametrize("name", sorted(CONLL_FORMATS))
def test_conll_non_utf8_bom_control_characters_and_sentence_lengths(name, tmp_path):
    reader_class, num_columns, docstart, tag_label = CONLL_FORMATS[name]
    reader = reader_class(tag_label=tag_label)
    tail = " NN I-NP" + (" O" if num_columns == 4 else "")
    # a token holding U+001C (str.split() whitespace) used to shift the columns silently
    tricky = ["a\x1cb", "1\xa0000", "🙂", "\x00", "\u202eRTL", "👍🏽"]
    long = [f"w{i}" for i in range(2000)]
    body = "\n".join(t + tail for t in tricky) + "\n\nalone" + tail + "\n\n"
    body += "\n".join(t + tail for t in long) + "\n"
    path = tmp_path / "ok.conll"
    path.write_bytes(("\ufeff" + docstart + "\n\n" + body).encode("utf-8"))
    tokens = [t for t, _ in instances_of(reader, str(path))]
    assert tokens == [tricky, ["alone"], long]

    path.write_bytes(b"ok" + tail.encode() + b"\n" + NOT_UTF8 + tail.encode() + b"\n")
    with pytest.raises(
        ConfigurationError, match="ok.conll, line 2: bytes that are not valid UTF-8"
    ):
        list(reader.read(str(path)))


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
