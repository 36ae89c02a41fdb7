"""
Shared pieces of the property tests of the readers (hypothesis, derandomized: the same examples
on every run): random text of printable, Unicode, control and emoji characters, and files of it.
"""

from pathlib import Path
from typing import List

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Characters that broke, or could break, a reader: C0/C1 controls, Unicode spaces that Python's
# str.split() splits on (U+001C..U+001F, U+0085, U+00A0, U+2028, U+3000), zero-width and
# bidi characters, emoji with modifiers, combining marks, CJK.
SPECIAL = [
    "\x00", "\x01", "\x0b", "\x0c", "\x1b", "\x1c", "\x1f", "\x7f", "\x85", "\xa0",
    "\u2028", "\u200b", "\u202e", "\u3000", "🙂", "👍🏽", "日本", "é", "e\u0301",
]  # fmt: skip
NOT_UTF8 = b"\xff\xfe caf\xe9 \x80"


def text(exclude: str, min_size: int = 1, max_size: int = 6):
    """Strings of SPECIAL pieces and arbitrary UTF-8 characters, without those in `exclude`."""
    piece = st.one_of(
        st.sampled_from([s for s in SPECIAL if not set(s) & set(exclude)]),
        st.characters(codec="utf-8", exclude_characters=exclude),
    )
    return st.lists(piece, min_size=min_size, max_size=max_size).map("".join)


def write(path: Path, lines: List[bytes], newline: bytes) -> str:
    path.write_bytes(b"".join(line + newline for line in lines))
    return str(path)
