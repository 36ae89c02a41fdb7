"""`tests/tagging/conlleval.py`: the port of conlleval's chunk counting that tests compare with."""

import pytest

from tests.tagging.conlleval import conlleval_counts, conlleval_f1


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
