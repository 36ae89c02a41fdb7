"""
A Python port of the chunk counting of the CoNLL shared tasks' official `conlleval` Perl script
(Erik Tjong Kim Sang; version 2004-01-26), for checking that AllenNLP's span F1 reports the
official number.

The script's chunk rules are those of IOB1 / IOB2 (`B-`, `I-`, `O`); the rules below are its
`startOfChunk` / `endOfChunk` for those tags.  BIOUL (= IOBES) tags, which our taggers predict,
are first rewritten to IOB2 (`U-X` -> `B-X`, `L-X` -> `I-X`; `E-`/`S-` likewise), which keeps
every chunk, as one does before running the Perl script.  A chunk is correct when its start, end
and type all match.  Only the overall precision / recall / F1 is computed.
"""

from typing import Dict, Iterable, List, Sequence, Tuple

# BIOUL / IOBES -> IOB2: single-word chunks begin, last words continue.
_PREFIX = {"U": "B", "S": "B", "L": "I", "E": "I"}


def _split(tag: str) -> Tuple[str, str]:
    if tag == "O" or "-" not in tag:
        return tag[:1] or "O", ""
    prefix, chunk_type = tag.split("-", 1)
    return _PREFIX.get(prefix, prefix), chunk_type


def _end_of_chunk(prev_tag: str, tag: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's endOfChunk: did a chunk end between the previous word and this one?"""
    return (
        (prev_tag == "B" and tag == "B")
        or (prev_tag == "B" and tag == "O")
        or (prev_tag == "I" and tag == "B")
        or (prev_tag == "I" and tag == "O")
        or (prev_tag not in ("O", ".") and prev_type != chunk_type)
        or prev_tag in ("]", "[")
    )


def _start_of_chunk(prev_tag: str, tag: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's startOfChunk: does a chunk start at this word?"""
    return (
        (prev_tag == "B" and tag == "B")
        or (prev_tag == "I" and tag == "B")
        or (prev_tag == "O" and tag == "B")
        or (prev_tag == "O" and tag == "I")
        or (tag not in ("O", ".") and prev_type != chunk_type)
        or tag in ("[", "]")
    )


def conlleval_counts(
    gold_sentences: Iterable[Sequence[str]], predicted_sentences: Iterable[Sequence[str]]
) -> Dict[str, int]:
    """
    `correct_chunks`, `gold_chunks`, `predicted_chunks`, `tokens` over all sentences, counted
    exactly as conlleval does (sentence boundaries end every open chunk, as the script's blank
    lines do).
    """
    counts = {"correct_chunks": 0, "gold_chunks": 0, "predicted_chunks": 0, "tokens": 0}
    for gold, predicted in zip(gold_sentences, predicted_sentences):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence lengths differ: {len(gold)} gold vs {len(predicted)}")
        in_correct = False
        prev_gold, prev_gold_type = "O", ""
        prev_pred, prev_pred_type = "O", ""
        for gold_tag, pred_tag in list(zip(gold, predicted)) + [("O", "O")]:
            tag_g, type_g = _split(gold_tag)
            tag_p, type_p = _split(pred_tag)
            end_g = _end_of_chunk(prev_gold, tag_g, prev_gold_type, type_g)
            end_p = _end_of_chunk(prev_pred, tag_p, prev_pred_type, type_p)
            start_g = _start_of_chunk(prev_gold, tag_g, prev_gold_type, type_g)
            start_p = _start_of_chunk(prev_pred, tag_p, prev_pred_type, type_p)
            if in_correct:
                if end_g and end_p and prev_gold_type == prev_pred_type:
                    in_correct = False
                    counts["correct_chunks"] += 1
                elif end_g != end_p or type_g != type_p:
                    in_correct = False
            if start_g and start_p and type_g == type_p:
                in_correct = True
            if start_g:
                counts["gold_chunks"] += 1
            if start_p:
                counts["predicted_chunks"] += 1
            prev_gold, prev_gold_type = tag_g, type_g
            prev_pred, prev_pred_type = tag_p, type_p
        # the ("O", "O") sentinel (conlleval's sentence boundary) closed every chunk
        counts["tokens"] += len(gold)
    return counts


def conlleval_f1(
    gold_sentences: Iterable[Sequence[str]], predicted_sentences: Iterable[Sequence[str]]
) -> Dict[str, float]:
    """`precision`, `recall`, `f1` in percent, as conlleval's `accuracy: ...; FB1:` line."""
    counts = conlleval_counts(list(gold_sentences), list(predicted_sentences))
    precision = (
        100.0 * counts["correct_chunks"] / counts["predicted_chunks"]
        if counts["predicted_chunks"]
        else 0.0
    )
    recall = (
        100.0 * counts["correct_chunks"] / counts["gold_chunks"] if counts["gold_chunks"] else 0.0
    )
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def read_conlleval_file(path: str) -> Tuple[List[List[str]], List[List[str]]]:
    """
    Reads conlleval's input format (`... gold predicted` per line, blank lines between
    sentences) into (gold sentences, predicted sentences).
    """
    gold: List[List[str]] = [[]]
    predicted: List[List[str]] = [[]]
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if gold[-1]:
                    gold.append([])
                    predicted.append([])
                continue
            gold[-1].append(columns[-2])
            predicted[-1].append(columns[-1])
    if not gold[-1]:
        gold.pop()
        predicted.pop()
    return gold, predicted
