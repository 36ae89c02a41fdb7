"""The validating CoNLL readers (`ldnet_conll2003`, `ldnet_conll2000`) and the conlleval port."""

import pytest

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader

from ldnet_allennlp.tagging.conlleval import conlleval_counts, conlleval_f1
from ldnet_allennlp.tagging.dataset_readers import (
    ValidatingConll2000DatasetReader,
    ValidatingConll2003DatasetReader,
)
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


def test_conlleval_counts_by_hand():
    # IOB1 gold (as in CoNLL-2003): PER, LOC | ORG, ORG (B- after I- of the same type)
    gold = [["I-PER", "I-PER", "O", "I-LOC"], ["I-ORG", "I-ORG", "B-ORG", "O"]]
    predicted = [["I-PER", "I-PER", "O", "I-ORG"], ["I-ORG", "I-ORG", "I-ORG", "O"]]
    assert conlleval_counts(gold, predicted) == {
        "correct_chunks": 1,
        "gold_chunks": 4,
        "predicted_chunks": 3,
        "tokens": 8,
    }
    scores = conlleval_f1(gold, predicted)
    assert scores["precision"] == pytest.approx(100 / 3)
    assert scores["recall"] == pytest.approx(25.0)
    assert scores["f1"] == pytest.approx(2 * (100 / 3) * 25 / (100 / 3 + 25))
    # BIOUL: U-PER, B-LOC L-LOC, U-LOC are three chunks; a wrong end breaks one
    bioul = [["U-PER", "B-LOC", "L-LOC", "U-LOC"]]
    assert conlleval_f1(bioul, bioul)["f1"] == 100.0
    assert conlleval_counts(bioul, [["U-PER", "U-LOC", "U-LOC", "U-LOC"]])["correct_chunks"] == 2
