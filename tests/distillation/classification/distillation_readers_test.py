"""The TSV and transfer-set readers, bad inputs included."""

import json

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.data.token_indexers import PretrainedTransformerIndexer

from ldnet_allennlp.distillation.classification.dataset_readers import (
    DistillationTsvReader,
    TransferSetReader,
)
from tests.distillation.conftest import DISTILLATION_FIXTURES

SICK_COLUMNS = dict(
    premise_column="sentence_A", hypothesis_column="sentence_B", label_column="entailment_label"
)


def tokens(instance, field="tokens"):
    return [t.text for t in instance.fields[field].tokens]


def test_sst2_tsv():
    instances = list(
        DistillationTsvReader().read(str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_train.tsv"))
    )
    assert len(instances) == 40
    first = instances[0]
    assert set(first.fields) == {"tokens", "label"}
    # GLUE's trailing space before the tab is not a token
    assert tokens(first)[-1] != "" and first.fields["label"].label in ("0", "1")


def test_sick_split_filter_and_crlf():
    path = str(DISTILLATION_FIXTURES / "sick" / "sick_fixture.txt")
    reader = DistillationTsvReader(**SICK_COLUMNS)
    train = list(reader.read(path + "#SemEval_set=TRAIN"))
    trial = list(reader.read(path + "#SemEval_set=TRIAL"))
    assert (len(train), len(trial)) == (30, 10)
    labels = {i.fields["label"].label for i in train + trial}
    assert labels <= {"NEUTRAL", "ENTAILMENT", "CONTRADICTION"}  # no "\r" left
    assert set(train[0].fields) == {"premise", "hypothesis", "label"}


def test_teacher_pair_is_one_field_with_special_tokens():
    bert = str(DISTILLATION_FIXTURES / "tiny_bert")
    reader = DistillationTsvReader(
        **SICK_COLUMNS,
        combine_pair=True,
        tokenizer=PretrainedTransformerTokenizer(bert, add_special_tokens=False),
        token_indexers={"tokens": PretrainedTransformerIndexer(bert)},
    )
    instance = reader.text_to_instance(premise="a man is eating", hypothesis="a dog")
    assert tokens(instance) == ["[CLS]", "a", "man", "is", "eating", "[SEP]", "a", "dog", "[SEP]"]
    assert [t.type_id for t in instance.fields["tokens"].tokens] == [0] * 6 + [1] * 3


def write(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


def test_non_utf8_bytes_name_file_and_line(tmp_path):
    path = write(tmp_path, "bad.tsv", b"sentence\tlabel\ngood film \t1\ncaf\xe9 film \t0\n")
    with pytest.raises(
        ConfigurationError, match=r"bad.tsv, line 3: bytes that are not valid UTF-8"
    ):
        list(DistillationTsvReader().read(path))


def test_empty_sentence_names_file_and_line(tmp_path):
    path = write(tmp_path, "empty.tsv", b"sentence\tlabel\ngood film \t1\n  \t0\n")
    with pytest.raises(ConfigurationError, match=r"empty.tsv, line 3: empty sentence"):
        list(DistillationTsvReader().read(path))


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path, "columns.tsv", b"sentence\tlabel\ngood film\t1\textra\n")
    with pytest.raises(ConfigurationError, match=r"columns.tsv, line 2: 3 tab-separated columns"):
        list(DistillationTsvReader().read(path))


HEADER = json.dumps({"transfer_set": {"teacher_labels": ["1", "0"]}}) + "\n"


def transfer_file(tmp_path, rows, header=HEADER):
    lines = header + "".join(json.dumps(row) + "\n" for row in rows)
    return write(tmp_path, "transfer.jsonl", lines.encode("utf-8"))


def test_transfer_set_rows(tmp_path):
    path = transfer_file(
        tmp_path,
        [
            {"sentence": "a good film", "label": "1", "teacher_logits": [2.0, -1.0]},
            {"sentence": "a [MASK] film", "teacher_logits": [-0.5, 0.5]},  # no gold: argmax
        ],
    )
    gold, augmented = TransferSetReader().read(path)
    assert gold.fields["label"].label == "1"
    assert augmented.fields["label"].label == "0"  # teacher_labels[argmax]
    assert augmented.fields["teacher_logits"].tensor.tolist() == [-0.5, 0.5]
    assert augmented.fields["metadata"]["teacher_labels"] == ("1", "0")
    # use_gold_labels=False: every hard label is the teacher's argmax
    gold, _ = TransferSetReader(use_gold_labels=False).read(path)
    assert gold.fields["label"].label == "1"


def test_transfer_row_without_logits(tmp_path):
    path = transfer_file(tmp_path, [{"sentence": "a good film", "label": "1"}])
    with pytest.raises(ConfigurationError, match=r"transfer.jsonl, line 2: the row has no"):
        list(TransferSetReader().read(path))


def test_transfer_row_with_wrong_number_of_classes(tmp_path):
    path = transfer_file(
        tmp_path,
        [
            {"sentence": "a good film", "teacher_logits": [1.0, 0.0]},
            {"sentence": "a dull film", "teacher_logits": [1.0, 0.0, 3.0]},
        ],
    )
    with pytest.raises(
        ConfigurationError, match=r"line 3: 3 teacher_logits, but the header lists 2"
    ):
        list(TransferSetReader().read(path))


def test_transfer_set_without_header(tmp_path):
    path = write(tmp_path, "transfer.jsonl", b'{"sentence": "x", "teacher_logits": [1, 2]}\n')
    with pytest.raises(ConfigurationError, match="line 1: expected the header"):
        list(TransferSetReader().read(path))


def test_transfer_set_empty_sentence_and_bad_json(tmp_path):
    path = transfer_file(tmp_path, [{"sentence": " ", "teacher_logits": [1.0, 0.0]}])
    with pytest.raises(ConfigurationError, match="line 2: empty sentence"):
        list(TransferSetReader().read(path))
    path = write(tmp_path, "broken.jsonl", (HEADER + '{"sentence": \n').encode())
    with pytest.raises(ConfigurationError, match="broken.jsonl, line 2: not valid JSON"):
        list(TransferSetReader().read(path))


def test_keep_text_puts_the_raw_sentences_in_metadata():
    sst2 = str(DISTILLATION_FIXTURES / "sst2" / "sst2_fixture_train.tsv")
    first = next(iter(DistillationTsvReader(keep_text=True).read(sst2)))
    assert first["metadata"].metadata == {"texts": ("a very great story",)}  # GLUE's space stripped
    assert "metadata" not in next(iter(DistillationTsvReader().read(sst2))).fields  # the teacher's
    sick = str(DISTILLATION_FIXTURES / "sick" / "sick_fixture.txt") + "#SemEval_set=TRAIN"
    pair = next(iter(DistillationTsvReader(**SICK_COLUMNS, keep_text=True).read(sick)))
    texts = pair["metadata"].metadata["texts"]
    assert len(texts) == 2 and texts == (
        " ".join(tokens(pair, "premise")),
        " ".join(tokens(pair, "hypothesis")),
    )


def test_transfer_set_rows_name_their_file():
    path = str(DISTILLATION_FIXTURES / "transfer" / "sst2.jsonl")
    metadata = next(iter(TransferSetReader().read(path)))["metadata"].metadata
    assert metadata["transfer_set"] == path and "texts" not in metadata
