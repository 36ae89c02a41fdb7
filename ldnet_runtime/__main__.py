"""
`python -m ldnet_runtime EXPORT_DIR INPUT_FILE [--output-file F] [--workers N] ...`: `allennlp
predict` for an exported tagger, over a large file with every core. Input: one JSON object per
line (`{"sentence"}` or `{"tokens"}`; blank lines skipped; `-` reads standard input). Output:
one JSON object per non-blank input line, in input order: the lines `allennlp predict
--output-file` writes, to the file or standard output.

Bulk tagging (`bulk.py`): fixed chunks of `--chunk-lines` input lines, tagged by `--workers`
processes (default: one per core) or by the workers of Dask's distributed scheduler
(`--scheduler tcp://HOST:8786`, several machines), written in order. Into a file, a killed run
resumes when the same command is run again, with no line lost or doubled. A bad line is named as
`FILE:LINE`: the run stops there, or with `--skip-bad-lines` skips and counts it.
"""

import argparse
import os
import sys
from typing import List, Optional

from ldnet_runtime.bulk import BadLineError, BulkOptions, ResumeError, run_bulk


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_args(argv: Optional[List[str]]) -> BulkOptions:
    parser = argparse.ArgumentParser(
        prog="python -m ldnet_runtime",
        description="Tag JSON lines with a tagger exported by `allennlp ldnet-export`, without "
        "torch or AllenNLP (the output lines of `allennlp predict`), with every core.",
    )
    parser.add_argument("export_dir", help="the folder ldnet-export wrote")
    parser.add_argument("input_file", help='JSON lines ({"sentence"} or {"tokens"}); - for stdin')
    parser.add_argument(
        "--output-file", default=None, help="default: standard output (not resumable)"
    )
    parser.add_argument("--batch-size", type=int, default=32, help="lines per call (default 32)")
    parser.add_argument(
        "--threads", type=int, default=1, help="onnxruntime's intra-op threads per worker (1)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (default: one per core; 1 tags in this process)",
    )
    parser.add_argument(
        "--chunk-lines",
        type=int,
        default=1000,
        help="input lines per chunk, the unit handed to a worker and written whole (1000)",
    )
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="skip (and count) input lines the tagger cannot take, instead of stopping there",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        help="the address of a Dask distributed scheduler (tcp://HOST:8786): its workers tag "
        "(they need ldnet_runtime, and EXPORT_DIR at the same path); --workers is ignored",
    )
    args = parser.parse_args(argv)
    for name in ("batch_size", "chunk_lines", "threads", "workers"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    return BulkOptions(
        export_dir=args.export_dir,
        input_file=args.input_file,
        output_file=args.output_file,
        batch_size=args.batch_size,
        chunk_lines=args.chunk_lines,
        workers=args.workers or default_workers(),
        threads=args.threads,
        skip_bad_lines=args.skip_bad_lines,
        scheduler=args.scheduler,
    )


def main(argv: Optional[List[str]] = None) -> None:
    options = parse_args(argv)
    from ldnet_runtime.export_format import read_export

    try:
        read_export(options.export_dir)  # refused here, before any worker starts
        skipped = run_bulk(options)
    except (BadLineError, ResumeError, OSError, ValueError, RuntimeError) as error:
        sys.exit(f"ldnet_runtime: {error}")
    if skipped:
        print(f"ldnet_runtime: {skipped} bad input line(s) skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
