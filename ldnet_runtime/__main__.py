"""
`python -m ldnet_runtime EXPORT_DIR INPUT_FILE [--output-file F] [--batch-size N] [--threads N]`:
`allennlp predict` for an exported tagger. Input: one JSON object per line (`{"sentence"}` or
`{"tokens"}`; blank lines skipped; `-` reads standard input). Output: one JSON object per
input line, the same lines `allennlp predict --output-file` writes, to the file or standard
output. Bad input stops with the line number and the predictor's message.
"""

import argparse
import json
import sys
from typing import Any, Dict, Iterable, Iterator, List, TextIO


class JsonLine(dict):
    """An input object that knows its line (for the predictor's error messages)."""

    def __init__(self, json_dict: Dict[str, Any], line_number: int) -> None:
        super().__init__(json_dict)
        self.where = f"input line {line_number} (not counting blank lines): "


def read_inputs(lines: Iterable[str]) -> Iterator[JsonLine]:
    """The non-blank lines as JSON objects, numbered as `allennlp predict` numbers them."""
    from ldnet_runtime.exported_tagger import InputError

    line_number = 0
    for line in lines:
        if not line.strip():
            continue
        line_number += 1
        try:
            json_dict = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"input line {line_number} (not counting blank lines) is not valid JSON "
                f"({error}): {line.rstrip()!r:.100}"
            ) from error
        if not isinstance(json_dict, dict):
            raise InputError(
                f"input line {line_number} (not counting blank lines) must be a JSON object, "
                f"got {line.rstrip()!r:.100}"
            )
        yield JsonLine(json_dict, line_number)


def predict(tagger: Any, lines: Iterable[str], output: TextIO, batch_size: int) -> int:
    """Tags every input line in batches of `batch_size`; returns the number of lines written."""
    written = 0
    batch: List[JsonLine] = []
    for json_dict in read_inputs(lines):
        batch.append(json_dict)
        if len(batch) == batch_size:
            written += _write(tagger.predict_batch_json(batch), output)
            batch = []
    if batch:
        written += _write(tagger.predict_batch_json(batch), output)
    return written


def _write(outputs: List[Dict[str, Any]], output: TextIO) -> int:
    for result in outputs:
        output.write(json.dumps(result) + "\n")
    return len(outputs)


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m ldnet_runtime",
        description="Tag JSON lines with a tagger exported by `allennlp ldnet-export`, without "
        "torch or AllenNLP (the output lines of `allennlp predict`).",
    )
    parser.add_argument("export_dir", help="the folder ldnet-export wrote")
    parser.add_argument("input_file", help='JSON lines ({"sentence"} or {"tokens"}); - for stdin')
    parser.add_argument("--output-file", default=None, help="default: standard output")
    parser.add_argument("--batch-size", type=int, default=1, help="default: 1, as allennlp predict")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")

    from ldnet_runtime.exported_tagger import Tagger

    try:
        tagger = Tagger(args.export_dir, threads=args.threads)
        source = sys.stdin if args.input_file == "-" else open(args.input_file, encoding="utf-8")
        with source:
            if args.output_file is None:
                predict(tagger, source, sys.stdout, args.batch_size)
            else:
                with open(args.output_file, "w", encoding="utf-8") as output:
                    predict(tagger, source, output, args.batch_size)
    except (OSError, ValueError, RuntimeError) as error:
        sys.exit(f"ldnet_runtime: {error}")


if __name__ == "__main__":
    main()
