"""
Bulk tagging for `python -m ldnet_runtime`: a JSON-lines file tagged in fixed chunks of input
lines by worker processes (or Dask's distributed workers), the output written in input order and
resumable after a kill.

- Chunks: physical input lines `[k * chunk_lines, (k + 1) * chunk_lines)`. Each is tagged whole
  by one worker (`tag_chunk`: its lines in batches of `batch_size`), so the output does not
  depend on how many workers there are, or where they run.
- Order: chunks are handed out in order, at most `2 * workers` at a time, and written in order.
- Resuming (with `--output-file OUT`): beside `OUT`, `OUT.progress.json` records the settings, the
  chunks written, the bytes of `OUT` they fill and the sha256 of the input bytes they came from.
  After each chunk: the chunk's lines are appended and flushed to disk (`fsync`), then the record
  is replaced (atomically). A re-run of the same command truncates `OUT` to the recorded bytes
  (dropping a chunk cut by the kill), checks the input's prefix, and goes on from the next chunk:
  no line is lost or doubled, and the output is byte-identical to an uninterrupted run. The
  record is deleted when the run ends; a run with no record starts afresh (`OUT` overwritten).
- Bad lines (not UTF-8, not JSON, not a JSON object, or refused by the tagger's input checks):
  named `FILE:LINE` (physical line, from 1). By default the run stops there (`BadLineError`; the
  chunks before it are written, so fixing the line and re-running the same command goes on
  from there); with `skip_bad_lines` each is reported on stderr, skipped (no output line) and
  counted. Blank lines give no output line, as under `allennlp predict`.
"""

import hashlib
import json
import os
import sys
from collections import deque
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Deque, Dict, Iterator, List, Optional, TextIO, Tuple

PROGRESS_SUFFIX = ".progress.json"
_TAGGERS: Dict[Tuple[str, Optional[int]], Any] = {}  # per worker process: export -> Tagger


class BadLineError(ValueError):
    """An input line the tagger cannot take, named by file and line."""


class ResumeError(ValueError):
    """A progress record that does not fit this command or this input."""


@dataclass
class Chunk:
    """Input lines `first_line`.. (numbered from 1), as bytes, and the input's sha256 up to them."""

    index: int
    first_line: int
    lines: List[bytes]
    end_offset: int
    prefix_sha256: str


@dataclass
class ChunkResult:
    """
    The output of one chunk: `text` (one JSON line per tagged input line), `bad` (`(line,
    message)` of each bad line; with `skip_bad_lines` false, tagging stopped at the first).
    """

    text: str
    bad: List[Tuple[int, str]] = field(default_factory=list)


def tagger_for(export_dir: str, threads: Optional[int]) -> Any:
    """The `Tagger` of `export_dir`, loaded once per process."""
    key = (export_dir, threads)
    if key not in _TAGGERS:
        from ldnet_runtime.exported_tagger import Tagger

        _TAGGERS[key] = Tagger(export_dir, threads=threads)
    return _TAGGERS[key]


def parse_line(raw: bytes, tagger: Any) -> Optional[List[List[str]]]:
    """
    The token sequences of one input line (`Tagger.sequences`; `None` for a blank line); a
    `ValueError` says what is wrong.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 ({error})") from error
    if not text.strip():
        return None
    try:
        json_dict = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error}): {text.rstrip()!r:.100}") from error
    if not isinstance(json_dict, dict):
        raise ValueError(f"must be a JSON object, got {text.rstrip()!r:.100}")
    return tagger.sequences(json_dict)  # the predictor's checks (an InputError, a ValueError)


def tag_chunk(
    export_dir: str,
    threads: Optional[int],
    batch_size: int,
    skip_bad_lines: bool,
    first_line: int,
    lines: List[bytes],
) -> ChunkResult:
    """
    Tags one chunk (in a worker): its good lines in batches of `batch_size`, in order.

    # Parameters

    export_dir : `str`
        The export folder (the same path on every worker).
    threads : `int`, optional
        onnxruntime's intra-op threads per worker.
    batch_size : `int`
        Input lines per call of the tagger.
    skip_bad_lines : `bool`
        Whether to go on after a bad line (else the chunk stops there, with no text).
    first_line : `int`
        The physical line number of `lines[0]` (from 1).
    lines : `List[bytes]`
        The chunk's raw lines.

    # Returns

    The chunk's `ChunkResult`.
    """
    tagger = tagger_for(export_dir, threads)
    inputs: List[List[List[str]]] = []
    bad: List[Tuple[int, str]] = []
    for number, raw in enumerate(lines, start=first_line):
        try:
            sequences = parse_line(raw, tagger)
        except ValueError as error:
            bad.append((number, str(error)))
            if not skip_bad_lines:
                return ChunkResult("", bad)
            continue
        if sequences is not None:
            inputs.append(sequences)
    out = []
    for start in range(0, len(inputs), batch_size):
        batch = inputs[start : start + batch_size]
        out.extend(json.dumps(result) + "\n" for result in tagger.results(batch))
    return ChunkResult("".join(out), bad)


def read_chunks(handle: Any, chunk_lines: int, skip_chunks: int, hasher: Any) -> Iterator[Chunk]:
    """The input's chunks after the first `skip_chunks` (which `hasher` has hashed already)."""
    index, lines, offset, line_number = 0, [], 0, 0
    for raw in handle:
        line_number += 1
        offset += len(raw)
        if index >= skip_chunks:
            lines.append(raw)
            hasher.update(raw)
        if line_number % chunk_lines == 0:
            if index >= skip_chunks:
                yield Chunk(index, line_number - chunk_lines + 1, lines, offset, hasher.hexdigest())
            index, lines = index + 1, []
    if lines:
        first = index * chunk_lines + 1
        yield Chunk(index, first, lines, offset, hasher.hexdigest())


class InlineExecutor(Executor):
    """Runs each task when it is submitted, in this process (one worker: no pool to start)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # handed to whoever asks for the result
            future.set_exception(error)
        return future


def make_executor(workers: int, scheduler: Optional[str]) -> Tuple[Executor, int, Any]:
    """
    Where chunks are tagged: Dask's distributed scheduler at `scheduler` (its workers), else
    `workers` local processes (this process for one). Returns the executor, how many chunks it
    works on at once, and what to close at the end (a Dask `Client`, or `None`).
    """
    if scheduler:
        from distributed import Client

        client = Client(scheduler)
        threads = sum(client.nthreads().values()) or 1
        return client.get_executor(pure=False), threads, client
    if workers == 1:
        return InlineExecutor(), 1, None
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
    return executor, workers, None


class Progress:
    """`OUT.progress.json`: the settings, chunks written, bytes of `OUT`, the input's prefix."""

    def __init__(self, output_file: str, settings: Dict[str, Any]) -> None:
        self.path = Path(output_file + PROGRESS_SUFFIX)
        self.settings = settings
        self.record: Dict[str, Any] = {
            "settings": settings,
            "chunks_done": 0,
            "output_bytes": 0,
            "input_bytes": 0,
            "input_sha256": hashlib.sha256().hexdigest(),
            "skipped": 0,
        }

    def resume(self, input_file: str, hasher: Any) -> bool:
        """Loads a record left by a killed run (checked against `settings` and the input, which
        `hasher` reads up to where it stopped); `False` when there is none."""
        if not self.path.is_file():
            return False
        record = json.loads(self.path.read_text(encoding="utf-8"))
        if record.get("settings") != self.settings:
            raise ResumeError(
                f"{self.path} records a run with other settings ({record.get('settings')}); run "
                f"that command again to resume it, or delete {self.path} to start afresh."
            )
        with open(input_file, "rb") as handle:
            remaining = record["input_bytes"]
            while remaining:
                block = handle.read(min(remaining, 1 << 20))
                if not block:
                    break
                hasher.update(block)
                remaining -= len(block)
        if remaining or hasher.hexdigest() != record["input_sha256"]:
            raise ResumeError(
                f"{input_file} changed in the lines already tagged (its first "
                f"{record['input_bytes']} bytes differ from the killed run's); delete "
                f"{self.path} to start afresh."
            )
        self.record = record
        return True

    def save(self) -> None:
        partial = self.path.with_name(self.path.name + ".tmp")
        partial.write_text(json.dumps(self.record), encoding="utf-8")
        os.replace(partial, self.path)


@dataclass
class BulkOptions:
    """The settings of one bulk run (see `python -m ldnet_runtime --help`)."""

    export_dir: str
    input_file: str
    output_file: Optional[str] = None
    batch_size: int = 32
    chunk_lines: int = 1000
    workers: int = 1
    threads: Optional[int] = 1
    skip_bad_lines: bool = False
    scheduler: Optional[str] = None


def run_bulk(options: BulkOptions, stderr: TextIO = sys.stderr) -> int:
    """
    Tags `options.input_file` into `options.output_file` (standard output if `None`; resumable
    only into a file), resuming a killed run of the same command.

    # Parameters

    options : `BulkOptions`
    stderr : `TextIO`
        Where skipped lines are reported.

    # Returns

    The number of bad lines skipped (in this run and the killed runs it resumed).

    # Raises

    `BadLineError` at a bad line without `skip_bad_lines`; `ResumeError` when a progress record
    does not fit.
    """
    settings = {
        "export_dir": str(Path(options.export_dir).resolve()),
        "input_file": str(Path(options.input_file).resolve()),
        "batch_size": options.batch_size,
        "chunk_lines": options.chunk_lines,
    }
    hasher = hashlib.sha256()
    resumable = options.output_file is not None and options.input_file != "-"
    progress = Progress(options.output_file, settings) if resumable else None
    if progress is not None and progress.resume(options.input_file, hasher):
        output = open(options.output_file, "r+b")
        output.truncate(progress.record["output_bytes"])
        output.seek(progress.record["output_bytes"])
    else:
        if progress is not None:
            progress.save()  # before the output is truncated: a kill now resumes from nothing
        output = open(options.output_file, "wb") if options.output_file else sys.stdout.buffer
    skip = progress.record["chunks_done"] if progress else 0
    source = sys.stdin.buffer if options.input_file == "-" else open(options.input_file, "rb")
    try:
        chunks = read_chunks(source, options.chunk_lines, skip, hasher)
        skipped = _tag_in_order(options, chunks, output, progress, stderr)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
        if output is sys.stdout.buffer:
            output.flush()
        else:
            output.close()
    if progress is None:
        return skipped
    progress.path.unlink()
    return progress.record["skipped"]


def _tag_in_order(options: BulkOptions, chunks: Iterator[Chunk], output, progress, stderr) -> int:
    """Hands out chunks, at most two per worker at a time, and writes their results in order;
    returns the number of bad lines skipped."""
    executor, slots, client = make_executor(options.workers, options.scheduler)
    task = (options.export_dir, options.threads, options.batch_size, options.skip_bad_lines)
    pending: Deque[Tuple[Chunk, Future]] = deque()
    skipped = 0
    try:
        while True:
            while len(pending) < 2 * slots:
                chunk = next(chunks, None)
                if chunk is None:
                    break
                future = executor.submit(tag_chunk, *task, chunk.first_line, chunk.lines)
                pending.append((chunk, future))
            if not pending:
                return skipped
            chunk, future = pending.popleft()
            skipped += _write(options, chunk, future.result(), output, progress, stderr)
    finally:
        for _, future in pending:
            future.cancel()
        if isinstance(executor, ProcessPoolExecutor):
            executor.shutdown(wait=True, cancel_futures=True)
        else:  # Dask's executor takes no cancel_futures: they are cancelled above
            executor.shutdown(wait=True)
        if client is not None:
            client.close()


def _write(
    options: BulkOptions, chunk: Chunk, result: ChunkResult, output, progress, stderr
) -> int:
    """Appends one chunk's lines (flushed to disk), then records it; reports bad lines and
    returns how many were skipped."""
    name = "<stdin>" if options.input_file == "-" else options.input_file
    for line, message in result.bad:
        if not options.skip_bad_lines:
            where = "" if progress is None else " (the output holds every chunk before its own: "
            where += "" if progress is None else "fix it and run the same command to go on)"
            raise BadLineError(
                f"{name}:{line}: {message}{where}; --skip-bad-lines skips such lines."
            )
        stderr.write(f"ldnet_runtime: skipped {name}:{line}: {message}\n")
    output.write(result.text.encode("utf-8"))
    output.flush()
    if progress is None:
        return len(result.bad)
    os.fsync(output.fileno())
    progress.record.update(
        chunks_done=chunk.index + 1,
        output_bytes=output.tell(),
        input_bytes=chunk.end_offset,
        input_sha256=chunk.prefix_sha256,
        skipped=progress.record["skipped"] + len(result.bad),
    )
    progress.save()
    return len(result.bad)
