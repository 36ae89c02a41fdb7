"""
The validating CoNLL readers (`ldnet_conll2003`, `ldnet_conll2000`): the same instances as
AllenNLP's readers, and bad input (property tests writing random files, then the fixed cases of
`docs/bad_inputs.md`): each file either reads into instances whose tokens equal the tokens
written, or raises our `ConfigurationError` naming the file and the first bad line.
"""

import re
from typing import List, Optional, Tuple

import pytest

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from allennlp.data.dataset_readers.dataset_utils.span_utils import InvalidTagSequence, to_bioul
from hypothesis import event, given
from hypothesis import strategies as st

from ldnet_allennlp.tagging.dataset_readers import (
    ValidatingConll2000DatasetReader,
    ValidatingConll2003DatasetReader,
)
from tests.bad_input.strategies import NOT_UTF8, PROPERTY, text, write
from tests.conftest import FIXTURES_ROOT

CONLL03 = str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt")
CONLL00 = str(FIXTURES_ROOT / "tagging" / "conll2000_train.txt")


def fields(instances):
    return [([t.text for t in i["tokens"].tokens], list(i["tags"].labels)) for i in instances]


def test_same_instances_as_allennlps_conll2003_reader():
    ours = ValidatingConll2003DatasetReader(convert_to_coding_scheme="BIOUL")
    theirs = Conll2003DatasetReader(convert_to_coding_scheme="BIOUL")
    assert fields(ours.read(CONLL03)) == fields(theirs.read(CONLL03))


@pytest.mark.parametrize(
    "reader, bad_line",
    [
        (ValidatingConll2003DatasetReader(), "Paris NNP I-NP\n"),
        (ValidatingConll2003DatasetReader(), "Paris NNP I-NP I-LOC extra\n"),
        (ValidatingConll2000DatasetReader(), "Paris NNP\n"),
    ],
)
def test_wrong_number_of_columns_names_file_and_line(reader, bad_line, tmp_path):
    good = "-DOCSTART- -X- O O\n\nFIFA NNP I-NP I-ORG\nsaid VBD I-VP O\n\n"
    if isinstance(reader, ValidatingConll2000DatasetReader):
        good = "FIFA NNP B-NP\nsaid VBD B-VP\n\n"
    path = tmp_path / "broken.txt"
    path.write_text(good + bad_line)
    line_number = good.count("\n") + 1
    with pytest.raises(ConfigurationError, match=f"broken.txt, line {line_number}: expected"):
        list(reader.read(str(path)))


def test_conll2000_holdout_partitions_train_and_reads_other_files_whole(tmp_path):
    def read(**kwargs):
        return fields(ValidatingConll2000DatasetReader(**kwargs).read(CONLL00))

    everything = read()
    train = read(holdout="exclude", holdout_every=4)
    held_out = read(holdout="only", holdout_every=4)
    assert len(held_out) == len(everything) // 4
    assert held_out == everything[3::4]
    assert len(train) + len(held_out) == len(everything)
    assert train == [s for i, s in enumerate(everything) if i % 4 != 3]
    other = tmp_path / "test.txt"
    other.write_text(open(CONLL00).read())
    reader = ValidatingConll2000DatasetReader(holdout="only", holdout_every=4, holdout_path=CONLL00)
    assert len(list(reader.read(str(other)))) == len(everything)
    assert len(list(reader.read(CONLL00))) == len(held_out)
    with pytest.raises(ConfigurationError, match="holdout"):
        ValidatingConll2000DatasetReader(holdout="dev")


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
