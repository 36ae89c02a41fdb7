"""
The `ldnet_tagger` predictor's tokenizer without AllenNLP: AllenNLP's `SpacyTokenizer` runs
the spaCy pipeline (its tokenizer, then components that do not change the tokens) and drops
whitespace tokens; here the pipeline is loaded without its components (`exclude`), which gives
the same tokens and loads faster. spaCy is imported on the first raw sentence only, so a tagger
given pre-tokenised input never loads it.

(Where torch is installed, importing spaCy imports it too, through thinc, which uses it when it
can: a runtime-only install without torch does not pay for that.)
"""

import importlib
from typing import List


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
