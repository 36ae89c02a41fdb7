"""Reading our files: text data (one way to decode it, one error text) and file digests."""

import hashlib
from typing import Iterator, Optional, Tuple

from allennlp.common.checks import ConfigurationError


def utf8_lines(path: str, shown_path: Optional[str] = None) -> Iterator[Tuple[int, str]]:
    """
    `(line_number, text)` for every line of the file at `path`: 1-based numbers, the line end
    (`\\n` or `\\r\\n`) and a UTF-8 byte-order mark on the first line removed. Bytes that are not
    UTF-8 are a `ConfigurationError` naming the file (`shown_path`, default `path`: e.g. the
    path a user gave when `path` is its cached copy) and the line.
    """
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise ConfigurationError(
                    f"{shown_path or path}, line {line_number}: bytes that are not valid UTF-8 "
                    f"({error}). Re-encode the file as UTF-8."
                ) from error
            yield line_number, text.rstrip("\r\n")


def file_sha256(path: str) -> str:
    """The sha256 hex digest of the file at `path`, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
