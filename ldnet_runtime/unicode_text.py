"""
Text that is not Unicode. A JSON string may hold `\\ud800`, half of a UTF-16 surrogate pair
without its other half, and Python reads it as a lone surrogate: a code point that is no
character and has no UTF-8. spaCy's tokenizer cannot hash it, and neither a JSON answer nor a
file in UTF-8 can hold it, so every input check (the runtime's `Tagger.sequences`, the
`ldnet_tagger` and `distillation_classifier` predictors, the server's `check_input`) refuses
such text up front in the same words (`not_unicode`), instead of failing later.

It imports neither numpy nor onnxruntime.
"""

from typing import Optional, Sequence


def lone_surrogate(texts: Sequence[str], item: Optional[str] = "token") -> Optional[str]:
    """
    None when every text of `texts` is Unicode text (it has a UTF-8 encoding); else, in words,
    where the first lone surrogate is: `"token 1's character 0 is U+D800, a lone surrogate"`
    (with `item` None, for one text: `"character 5 is U+DC00, a lone surrogate"`).

    # Parameters

    texts : `Sequence[str]`
        The texts of one input: its tokens, or its one sentence.
    item : `str`, optional (default = `"token"`)
        What one text is called in the answer; None for an input of one text.
    """
    if "".join(texts).isascii():
        return None
    for index, text in enumerate(texts):
        try:
            text.encode("utf-8")  # two halves in a row are two lone surrogates too
        except UnicodeEncodeError as error:
            where = f"character {error.start}"
            if item is not None:
                where = f"{item} {index}'s {where}"
            return f"{where} is U+{ord(text[error.start]):04X}, a lone surrogate"
    return None


def not_unicode(key: str, texts: Sequence[str]) -> Optional[str]:
    """
    None when `texts`, what an input's `key` holds, are Unicode text; else the refusal, e.g.
    `"tokens" must be Unicode text, but token 1's character 0 is U+D800, a lone surrogate (half
    of a UTF-16 surrogate pair, without its other half)`. `"tokens"` holds tokens (each named
    by its index), any other key one text.
    """
    problem = lone_surrogate(texts, item="token" if key == "tokens" else None)
    if problem is None:
        return None
    half = "half of a UTF-16 surrogate pair, without its other half"
    return f'"{key}" must be Unicode text, but {problem} ({half})'
