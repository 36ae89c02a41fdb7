"""
The one transfer-set writer, shared by `allennlp ldnet-distill-transfer-set`
(`classification/transfer_set.py`) and `allennlp ldnet-tagging-transfer-set`
(`tagging/transfer_set.py`): a JSON-lines file with a header line
(`{"transfer_set": {...settings...}}`) and then one row per input, labelled by a `Teacher`
(`write_transfer_set`).

Deterministic and resumable: the row list is a pure function of the input and the settings, in
length order within windows of `SORT_WINDOW_BATCHES` batches (`sorted_within_windows`), and it
is written in the fixed slices `[k * batch_size, (k + 1) * batch_size)`, each slice written and
flushed whole. A re-run with the same settings keeps the complete batches already on disk
(`resume_point`, checking them against the regenerated rows), drops a partly written batch, and
continues; it ends byte-identical to an uninterrupted run. A re-run with other settings is an
error.
"""

import json
import logging
import os
from typing import Any, Callable, Dict, List, TypeVar

from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm

logger = logging.getLogger(__name__)

HEADER_KEY = "transfer_set"
# rows are sorted by length within windows of this many batches, so that a batch pads little
SORT_WINDOW_BATCHES = 100

Row = TypeVar("Row")


def sorted_within_windows(rows: List[Row], window: int, key: Callable[[Row], Any]) -> List[Row]:
    """
    `rows` with each window of `window` consecutive rows sorted by `key` (stable: equal keys keep
    their order); no row leaves its window. Transfer sets order rows by length this way, so that
    a batch pads little while the row list stays a pure function of the input.
    """
    return [
        row
        for start in range(0, len(rows), window)
        for row in sorted(rows[start : start + window], key=key)
    ]


def resume_point(
    output_file: str,
    header_line: str,
    rows: List[Dict[str, Any]],
    batch_size: int,
    row_key: Callable[[Dict[str, Any]], Any],
    parse_header: Callable[[str, str], Dict[str, Any]],
) -> int:
    """
    The number of rows of `rows` already written in complete batches (0 for a new file, which is
    created with `header_line`). Truncates the file after them.

    # Parameters

    output_file : `str`
    header_line : `str`
        The JSON header line (ending in a newline) the settings give.
    rows : `List[Dict[str, Any]]`
        The full, regenerated row list; the written rows must agree with it under `row_key`.
    batch_size : `int`
    row_key : `Callable`
        What must be equal between a written row and its regenerated row (e.g. its text).
    parse_header : `Callable[[path, line], Dict]`
        Parses and checks a header line; raises `ConfigurationError` naming the file.

    # Raises

    `ConfigurationError`, naming the file (and line), when the existing file was built with other
    settings or from another input, or holds a complete line that is not JSON.
    """
    if not os.path.exists(output_file) or os.path.getsize(output_file) == 0:
        with open(output_file, "w", encoding="utf-8") as handle:
            handle.write(header_line)
        return 0
    offsets = []
    with open(output_file, "rb") as handle:
        first = handle.readline()
        existing = parse_header(output_file, first.decode("utf-8", "replace"))
        expected = json.loads(header_line)[HEADER_KEY]
        if existing != expected:
            differing = sorted(
                k for k in set(existing) | set(expected) if existing.get(k) != expected.get(k)
            )
            raise ConfigurationError(
                f"{output_file} exists and was built with other settings ({differing}); "
                "delete it or re-run with the same arguments to resume"
            )
        offset = handle.tell()
        complete: List[Dict[str, Any]] = []
        for line_number, raw in enumerate(handle, start=2):
            if not raw.endswith(b"\n"):
                break  # a line cut by the interruption
            try:
                complete.append(json.loads(raw))
            except ValueError as error:  # not UTF-8, or not JSON
                raise ConfigurationError(
                    f"{output_file}, line {line_number}: a complete line that is not a JSON row "
                    f"({error}); this file was not written by this command, or was edited. "
                    "Delete it (or choose another output file) and start again"
                ) from error
            offset += len(raw)
            offsets.append(offset)
    done = min((len(complete) // batch_size) * batch_size, len(rows))
    for line_index in range(done):
        if row_key(complete[line_index]) != row_key(rows[line_index]):
            raise ConfigurationError(
                f"{output_file}, line {line_index + 2}: differs from the regenerated row; the "
                "input file changed since the interrupted run. Delete the output and start again"
            )
    keep = offsets[done - 1] if done > 0 else len(first)
    with open(output_file, "r+b") as handle:
        handle.truncate(keep)
    if done:
        logger.info("Resuming %s after %d rows already written", output_file, done)
    return done


def write_transfer_set(
    output_file: str,
    settings: Dict[str, Any],
    rows: List[Dict[str, Any]],
    batch_size: int,
    row_key: Callable[[Dict[str, Any]], Any],
    parse_header: Callable[[str, str], Dict[str, Any]],
    label_batch: Callable[[List[Dict[str, Any]]], List[Dict[str, Any]]],
    description: str,
) -> int:
    """
    Writes (or resumes) a transfer set: the header `{"transfer_set": settings}`, then
    `label_batch` of each batch of `rows`, one JSON line per labelled row. Returns the number of
    rows already on disk before this call (`resume_point`).

    # Parameters

    output_file : `str`
    settings : `Dict[str, Any]`
        Everything the rows depend on (the teacher's labels included); a re-run with other
        settings is an error.
    rows : `List[Dict[str, Any]]`
        The unlabelled rows, in their final order.
    batch_size : `int`
    row_key, parse_header : `Callable`
        See `resume_point`.
    label_batch : `Callable`
        A batch of unlabelled rows to the rows to write, the teacher's soft targets added.
    description : `str`
        The progress bar's label.
    """
    header_line = json.dumps({HEADER_KEY: settings}) + "\n"
    done = resume_point(output_file, header_line, rows, batch_size, row_key, parse_header)
    todo = rows[done:]
    batches = range(0, len(todo), batch_size)
    with open(output_file, "a", encoding="utf-8") as handle:
        for start in Tqdm.tqdm(batches, desc=description, unit="batch"):
            labelled = label_batch(todo[start : start + batch_size])
            handle.write("".join(json.dumps(row) + "\n" for row in labelled))
            handle.flush()
    return done
