"""
The body of a `POST /predict` request, checked before it reaches the predictor: what the
`ldnet_tagger` predictor takes (`{"sentence": str}` or `{"tokens": [str, ...]}`), or a JSON list of
them. Every refusal is a `BadRequest` with an HTTP status and a sentence that says what to change.
"""

import json
from typing import Any, List, Tuple

from allennlp.common.util import JsonDict

from ldnet_runtime.unicode_text import not_unicode

EXAMPLE = '{"sentence": "Maria Lopez visited Paris."}'


class BadRequest(Exception):
    """A request the server refuses: `status` (4xx) and `message`, shown to the client as is."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def max_body_bytes(max_chars: int, max_sentences: int) -> int:
    """
    The most bytes a body within the limits can take: up to 12 bytes a character (a JSON
    `\\uXXXX` escape of each half of a surrogate pair), 4 more per token (quotes, comma, space),
    and room for the brackets and keys.
    """
    return max_sentences * (16 * max_chars + 64) + 1024


def parse_predict_body(
    body: bytes, max_chars: int, max_sentences: int
) -> Tuple[List[JsonDict], bool]:
    """
    The inputs of a `POST /predict` body, and whether it was one object (answered with one
    object) rather than a list (answered with a list).

    Refused: an empty body, bytes that are not UTF-8 JSON (400); JSON that is not an object or a
    list of objects, an object without exactly one of `"sentence"` (a string) and `"tokens"` (a
    list of non-empty strings), or with any other key (422); a text longer than `max_chars`
    characters (tokens count with one space between them), or more than `max_sentences` inputs
    (413).
    """
    if not body.strip():
        raise BadRequest(400, f"The request body is empty: send a JSON object such as {EXAMPLE}.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(
            400,
            f"The request body is not UTF-8 ({error.reason} at byte {error.start}): "
            "send JSON encoded as UTF-8.",
        ) from error
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadRequest(
            400,
            f"The request body is not valid JSON ({error.msg} at line {error.lineno}, column "
            f"{error.colno}): send a JSON object such as {EXAMPLE}.",
        ) from error
    except RecursionError as error:
        raise BadRequest(400, "The request body nests JSON too deeply to read.") from error
    if isinstance(value, dict):
        check_input(value, "The JSON object", max_chars)
        return [value], True
    if not isinstance(value, list):
        raise BadRequest(
            422,
            f"The request body must be a JSON object such as {EXAMPLE}, or a list of them; "
            f"got {type_name(value)}.",
        )
    if len(value) > max_sentences:
        raise BadRequest(
            413,
            f"The request holds {len(value)} sentences; this server takes at most "
            f"{max_sentences} per request (--max-sentences): split it into several requests.",
        )
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadRequest(
                422,
                f"Item {i} of the list (counting from 0) must be a JSON object such as "
                f"{EXAMPLE}; got {type_name(item)}.",
            )
        check_input(item, f"Item {i} of the list (counting from 0)", max_chars)
    return value, False


def check_input(item: JsonDict, subject: str, max_chars: int) -> None:
    """
    One input object (`subject` names it in an error): exactly one of `"sentence"` / `"tokens"`,
    well typed, within `max_chars`.
    """
    keys = sorted(item)
    if keys not in (["sentence"], ["tokens"]):
        unknown = [key for key in keys if key not in ("sentence", "tokens")]
        if unknown:
            problem = f"it has {unknown}, which the tagger does not read"
        elif keys:
            problem = "it has both, so which one to tag is unclear"
        else:
            problem = "it has no key"
        raise BadRequest(
            422,
            f'{subject} needs exactly one of the keys "sentence" (raw text) or "tokens" (a list '
            f"of words); {problem}.",
        )
    if "sentence" in item:
        sentence = item["sentence"]
        if not isinstance(sentence, str):
            raise BadRequest(
                422, f'{subject}: "sentence" must be a string; got {type_name(sentence)}.'
            )
        length = len(sentence)
        refusal = not_unicode("sentence", [sentence])
    else:
        tokens = item["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
            raise BadRequest(
                422,
                f'{subject}: "tokens" must be a list of non-empty strings, e.g. '
                f'["Maria", "Lopez"]; got {short(tokens)}.',
            )
        length = sum(len(t) for t in tokens) + max(len(tokens) - 1, 0)
        refusal = not_unicode("tokens", tokens)
    if refusal:
        raise BadRequest(422, f"{subject}: {refusal}.")
    if length > max_chars:
        raise BadRequest(
            413,
            f"{subject}: the text is {length} characters long; this server takes at most "
            f"{max_chars} per sentence (--max-chars): split it into sentences and send them as a "
            "list.",
        )


def type_name(value: Any) -> str:
    """A JSON value's kind as a reader would say it, with a short quote."""
    kinds = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }
    for kind, name in kinds.items():
        if type(value) is kind:
            return f"{name} {short(value)}" if kind is not type(None) else name
    return f"a number {short(value)}"


def short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
