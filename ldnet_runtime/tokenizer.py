"""
The `ldnet_tagger` predictor's tokenizer without AllenNLP: AllenNLP's `SpacyTokenizer` runs
the spaCy pipeline (its tokenizer, then components that do not change the tokens) and drops
whitespace tokens; here the pipeline is loaded without its components (`exclude`), which gives
the same tokens and loads faster. spaCy is imported on the first raw sentence only, so a tagger
given pre-tokenised input never loads it.

(Where torch is installed, importing spaCy imports it too, through thinc, which uses it when it
can: a runtime-only install without torch does not pay for that.)

`paragraphs` cuts raw text at its blank lines: the predictor, the runtime and the spaCy component
tag each paragraph as a sequence of its own.
"""

import importlib
import re
from typing import List

PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n|\u2029")
r"""
A paragraph break in raw text: a blank line (two line feeds with only other whitespace between
them, so `"\r\n\r\n"` too) or U+2029 PARAGRAPH SEPARATOR.
"""


def paragraphs(text: str) -> List[str]:
    r"""
    `text` cut at its paragraph breaks (`PARAGRAPH_BREAK`). A raw input's paragraphs are tagged
    as separate sequences, so that no span runs across a blank line ("Bonn\n\nParis" is two
    places, not one). The breaks are whitespace, which spaCy's tokenizer cuts at before anything
    else, so the paragraphs' tokens, one after another, are the whole text's tokens.
    """
    return PARAGRAPH_BREAK.split(text)


class SpacyTokenizer:
    def __init__(self, model_name: str) -> None:
        from pathlib import Path

        import spacy

        try:
            package = importlib.import_module(model_name)
        except ImportError as error:
            raise RuntimeError(
                f"raw sentences are tokenised with the spaCy model {model_name!r}, which is not "
                f"installed (`pip install {model_name}`); or give pre-tokenised input "
                '({"tokens": [...]}).'
            ) from error
        meta = spacy.util.get_model_meta(Path(package.__file__).parent)
        components = meta.get("components", meta.get("pipeline", []))
        self.nlp = spacy.load(model_name, exclude=list(components))

    def tokenize(self, text: str) -> List[str]:
        return [token.text for token in self.nlp(text) if not token.is_space]
