"""
A transfer set for distilling a CRF tagger (`build_tagging_transfer_set`; the subcommand is
`allennlp ldnet-tagging-transfer-set`): unlabelled tokenized sentences, each token given the
teacher's posterior marginals (a `Teacher`, e.g. an ensemble of LD-Net taggers) and each
sentence a silver tag sequence decoded from them (`silver_tags`).

Input: one sentence per line, tokens separated by whitespace (as `scripts/prepare_lm_corpus.py`
writes). Blank lines are skipped; a line longer than `max_tokens` tokens is an error naming the
file and line.

Output: JSON lines. Line 1 is the header `{"transfer_set": {...}}` with the teacher's tag order
(`teacher_labels`) and every setting; then one row per sentence, in input order within windows
of `SORT_WINDOW_BATCHES * batch_size` sentences sorted by length (so that a batch pads little):

    {"line": 17, "tokens": ["EU", "rejects", ...], "silver": ["U-ORG", "O", ...],
     "marginals": [[[3, 0.9981]], [[0, 0.9964], [5, 0.0036]], ...]}

`marginals[t]` lists `[tag index, probability]` for the tags of token t whose probability is at
least `min_probability`, rounded to `PROBABILITY_DECIMALS` (the reader renormalises them).

Deterministic and resumable as `ldnet-distill-transfer-set`: the rows are a pure function of the
input and the settings, written in whole batches; a re-run with the same arguments continues and
ends byte-identical to an uninterrupted run (`ldnet_allennlp.distillation.transfer_set`).
"""

import json
import os
import time
from typing import Any, Dict, List, Optional

from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.common.file_utils import utf8_lines
from ldnet_allennlp.distillation.tagging.teacher import silver_tags
from ldnet_allennlp.distillation.teacher import Teacher
from ldnet_allennlp.distillation.transfer_set import (
    HEADER_KEY,
    SORT_WINDOW_BATCHES,
    sorted_within_windows,
    write_transfer_set,
)

PROBABILITY_DECIMALS = 4


def read_sentences(
    input_file: str, max_sentences: Optional[int] = None, max_tokens: int = 200
) -> List[Dict[str, Any]]:
    """The rows `{"line": n, "tokens": [...]}` of the non-blank lines of `input_file` (the first
    `max_sentences` of them), in file order."""
    rows: List[Dict[str, Any]] = []
    for line_number, text in utf8_lines(input_file):
        tokens = text.split()
        if not tokens:
            continue
        if len(tokens) > max_tokens:
            raise ConfigurationError(
                f"{input_file}, line {line_number}: {len(tokens)} tokens, more than max_tokens "
                f"({max_tokens}); is this one sentence per line, tokens separated by spaces?"
            )
        rows.append({"line": line_number, "tokens": tokens})
        if max_sentences is not None and len(rows) >= max_sentences:
            break
    if not rows:
        raise ConfigurationError(f"{input_file}: no sentences (one per line, tokens by spaces)")
    return rows


def parse_header(path: str, line: str) -> Dict[str, Any]:
    """The settings in a tagging transfer set's header line; a `ConfigurationError` naming the
    file when the line is not such a header."""
    try:
        header = json.loads(line)[HEADER_KEY]
        labels = header["teacher_labels"]
        header["kind"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ConfigurationError(
            f"{path}, line 1: expected the header "
            '{"transfer_set": {"kind": "crf_marginals", "teacher_labels": [...], ...}} written '
            "by `allennlp ldnet-tagging-transfer-set`"
        ) from error
    if header["kind"] != "crf_marginals" or not isinstance(labels, list) or not labels:
        raise ConfigurationError(
            f"{path}, line 1: not a tagging transfer set (kind {header.get('kind')!r})"
        )
    return header


def _sparse(marginals, min_probability: float) -> List[List[List[float]]]:
    return [
        [
            [k, round(float(p), PROBABILITY_DECIMALS)]
            for k, p in enumerate(token)
            if p >= min_probability
        ]
        for token in marginals
    ]


def build_tagging_transfer_set(
    teacher: Teacher,
    input_file: str,
    output_file: str,
    teacher_names: List[str],
    batch_size: int = 32,
    max_sentences: Optional[int] = None,
    min_probability: float = 1e-3,
) -> Dict[str, Any]:
    """
    Builds (or resumes) the transfer set; see the module doc.

    # Returns

    `Dict[str, Any]`
        `rows` (in the file), `labelled_now` (sentences the teacher labelled in this call),
        `tokens_labelled_now`, `seconds` (teacher time in this call) and `words_per_second`.
    """
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
    if not 0.0 < min_probability < 1.0:
        raise ConfigurationError(f"min_probability must be in (0, 1), got {min_probability}")
    rows = sorted_within_windows(
        read_sentences(input_file, max_sentences),
        SORT_WINDOW_BATCHES * batch_size,
        key=lambda row: len(row["tokens"]),
    )
    settings = {
        "kind": "crf_marginals",
        "teacher_labels": teacher.labels,
        "label_encoding": teacher.label_encoding,
        "teachers": teacher_names,
        "input_file": os.path.abspath(input_file),
        "max_sentences": max_sentences,
        "batch_size": batch_size,
        "length_sorted_window": SORT_WINDOW_BATCHES * batch_size,
        "min_probability": min_probability,
        "probability_decimals": PROBABILITY_DECIMALS,
    }
    timed = {"seconds": 0.0, "tokens": 0}

    def label_batch(batch: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        began = time.perf_counter()
        marginals = teacher.soft_targets([row["tokens"] for row in batch])
        timed["seconds"] += time.perf_counter() - began
        timed["tokens"] += sum(len(row["tokens"]) for row in batch)
        silver = silver_tags(marginals, teacher.labels, teacher.label_encoding)
        return [
            {**row, "silver": tags, "marginals": _sparse(probabilities, min_probability)}
            for row, tags, probabilities in zip(batch, silver, marginals)
        ]

    done = write_transfer_set(
        output_file,
        settings,
        rows,
        batch_size,
        lambda row: row["tokens"],
        parse_header,
        label_batch,
        "teacher marginals",
    )
    seconds, tokens = timed["seconds"], timed["tokens"]
    return {
        "rows": len(rows),
        "labelled_now": len(rows) - done,
        "tokens_labelled_now": tokens,
        "seconds": seconds,
        "words_per_second": tokens / seconds if seconds else None,
    }
