"""
`ldnet_runtime.spans` against AllenNLP's span decoders: the same spans (as sets: the predictor
sorts them) and the same refusals, on random tag sequences, well-formed or not.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from allennlp.data.dataset_readers.dataset_utils import span_utils

from ldnet_runtime.spans import SPAN_DECODERS, InvalidTagSequence

ALLENNLP = {
    "BIOUL": span_utils.bioul_tags_to_spans,
    "BIO": span_utils.bio_tags_to_spans,
    "IOB1": span_utils.iob1_tags_to_spans,
}
TAGS = ["O"] + [f"{p}-{t}" for t in ("PER", "LOC", "X-Y") for p in "BIULE"] + ["I", "B", "U"]


def decode(decoder, tags):
    try:
        return sorted(decoder(tags))
    except (InvalidTagSequence, span_utils.InvalidTagSequence):
        return "invalid"


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(sorted(ALLENNLP)), st.lists(st.sampled_from(TAGS), max_size=12))
def test_same_spans_as_allennlp(encoding, tags):
    assert decode(SPAN_DECODERS[encoding], tags) == decode(ALLENNLP[encoding], tags)


def test_by_hand():
    tags = ["B-PER", "L-PER", "O", "U-LOC", "B-X-Y", "I-X-Y", "L-X-Y"]
    assert SPAN_DECODERS["BIOUL"](tags) == [("PER", (0, 1)), ("LOC", (3, 3)), ("X-Y", (4, 6))]
