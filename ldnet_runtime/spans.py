"""
AllenNLP's span decoders (`allennlp.data.dataset_readers.dataset_utils.span_utils`, 2.10.1)
without AllenNLP: tags -> `(label, (start, end))` spans, `end` inclusive, as the `ldnet_tagger`
predictor calls them (no classes ignored). The same spans for every tag sequence, ill-formed
ones included (BIOUL's raise `InvalidTagSequence`, BIO's and IOB1's keep them); the order of
BIO's and IOB1's (a set) does not matter, as the predictor sorts the spans.
"""

from typing import Callable, Dict, List, Optional, Tuple

TypedSpan = Tuple[str, Tuple[int, int]]


class InvalidTagSequence(ValueError):
    def __init__(self, tag_sequence: Optional[List[str]] = None) -> None:
        super().__init__(" ".join(tag_sequence or []))
        self.tag_sequence = tag_sequence


def bioul_tags_to_spans(tag_sequence: List[str]) -> List[TypedSpan]:
    spans = []
    index = 0
    while index < len(tag_sequence):
        label = tag_sequence[index]
        if label[0] == "U":
            spans.append((label.partition("-")[2], (index, index)))
        elif label[0] == "B":
            start = index
            while label[0] != "L":
                index += 1
                if index >= len(tag_sequence):
                    raise InvalidTagSequence(tag_sequence)
                label = tag_sequence[index]
                if not (label[0] == "I" or label[0] == "L"):
                    raise InvalidTagSequence(tag_sequence)
            spans.append((label.partition("-")[2], (start, index)))
        elif label != "O":
            raise InvalidTagSequence(tag_sequence)
        index += 1
    return spans


def bio_tags_to_spans(tag_sequence: List[str]) -> List[TypedSpan]:
    spans = set()
    span_start = span_end = 0
    active_tag: Optional[str] = None
    for index, string_tag in enumerate(tag_sequence):
        bio_tag = string_tag[0]
        if bio_tag not in ("B", "I", "O"):
            raise InvalidTagSequence(tag_sequence)
        conll_tag = string_tag[2:]
        if bio_tag == "O":
            if active_tag is not None:
                spans.add((active_tag, (span_start, span_end)))
            active_tag = None
        elif bio_tag == "I" and conll_tag == active_tag:
            span_end += 1
        else:  # "B", or an "I" that does not continue the active span
            if active_tag is not None:
                spans.add((active_tag, (span_start, span_end)))
            active_tag = conll_tag
            span_start = span_end = index
    if active_tag is not None:
        spans.add((active_tag, (span_start, span_end)))
    return list(spans)


def iob1_tags_to_spans(tag_sequence: List[str]) -> List[TypedSpan]:
    spans = set()
    span_start = span_end = 0
    active_tag: Optional[str] = None
    previous_bio: Optional[str] = None
    previous_tag: Optional[str] = None
    for index, string_tag in enumerate(tag_sequence):
        bio_tag, conll_tag = string_tag[0], string_tag[2:]
        if bio_tag not in ("B", "I", "O"):
            raise InvalidTagSequence(tag_sequence)
        if bio_tag == "O":
            if active_tag is not None:
                spans.add((active_tag, (span_start, span_end)))
            active_tag = None
        elif (
            bio_tag == "B" or (bio_tag == "I" and previous_bio == "O") or previous_tag != conll_tag
        ):
            if active_tag is not None:
                spans.add((active_tag, (span_start, span_end)))
            active_tag = conll_tag
            span_start = span_end = index
        else:
            span_end += 1
        previous_bio, previous_tag = bio_tag, conll_tag
    if active_tag is not None:
        spans.add((active_tag, (span_start, span_end)))
    return list(spans)


SPAN_DECODERS: Dict[str, Callable[[List[str]], List[TypedSpan]]] = {
    "BIOUL": bioul_tags_to_spans,
    "BIO": bio_tags_to_spans,
    "IOB1": iob1_tags_to_spans,
}
