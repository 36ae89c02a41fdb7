"""
A chunker whose `tokens` and `token_characters` embeddings have rows for words and characters
of the test file (a vocabulary built with `train_vocab_only: false`) against the same chunker
with a training-file vocabulary: those rows are never looked up in training, so they keep their
random initial values, and a training-file vocabulary gives such a word the OOV row instead.
The tag vocabulary (the task's tag inventory) is left as it is.

- `restricted_start`: a serialization directory (vocabulary/ + best.th) with those rows and
  vocabulary entries removed, the start of a chunking student that depends on no test file;
- `evaluate_with_training_vocabulary`: test F1 of an archive as it is and with those rows
  replaced by the OOV row (what a training-file vocabulary gives).
"""

import shutil
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from ldnet_allennlp.tagging.dataset_readers.conll import ValidatingConll2000DatasetReader

# (namespace, the weight of its embedding)
EMBEDDINGS = (
    ("tokens", "text_field_embedder.token_embedder_tokens.weight"),
    (
        "token_characters",
        "text_field_embedder.token_embedder_token_characters._embedding._module.weight",
    ),
)


def training_items(train_file: str) -> Dict[str, Set[str]]:
    """By namespace, the lowercased words and the characters of every sentence of a CoNLL-2000
    training file (the held-out tenth included: the shipped chunkers' vocabulary read it too)."""
    words, characters = set(), set()
    for instance in ValidatingConll2000DatasetReader().read(train_file):
        for token in instance["tokens"].tokens:
            words.add(token.text.lower())
            characters.update(token.text)
    return {"tokens": words, "token_characters": characters}


def _kept_rows(items: List[str], allowed: Set[str]) -> Tuple[List[int], List[int]]:
    """The rows of a padded namespace's `items` to keep (padding 0 and OOV 1 always) and the
    others."""
    kept = [i for i, item in enumerate(items) if i <= 1 or item in allowed]
    return kept, [i for i in range(len(items)) if i > 1 and items[i] not in allowed]


def restricted_start(start: Path, out: Path, train_file: str) -> Dict[str, Any]:
    """`start` (vocabulary/ + best.th) with only the training file's words and characters, in
    `out`; returns how many entries were dropped."""
    import torch

    if (out / "best.th").exists():
        return {}
    allowed = training_items(train_file)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(start / "vocabulary", partial / "vocabulary")
    state = torch.load(start / "best.th", map_location="cpu")
    dropped = {}
    for namespace, key in EMBEDDINGS:
        lines = (start / "vocabulary" / f"{namespace}.txt").read_text(encoding="utf-8")
        items = ["@@PADDING@@"] + lines.split("\n")[: -1 if lines.endswith("\n") else None]
        keep, dropped_rows = _kept_rows(items, allowed[namespace])
        state[key] = state[key][keep].clone()
        (partial / "vocabulary" / f"{namespace}.txt").write_text(
            "".join(items[i] + "\n" for i in keep[1:]), encoding="utf-8"
        )
        dropped[namespace] = len(dropped_rows)
    torch.save(state, partial / "best.th")
    shutil.copyfile(start / "config.json", partial / "config.json")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return dropped


def evaluate_with_training_vocabulary(
    archive: str, test_file: str, train_file: str
) -> Dict[str, Any]:
    """Test F1 of `archive` as shipped and with its test-only rows replaced by the OOV row."""
    import torch
    from allennlp.data import DataLoader
    from allennlp.models.archival import load_archive
    from allennlp.training.util import evaluate

    allowed = training_items(train_file)
    loaded = load_archive(archive)
    model, reader = loaded.model, loaded.validation_dataset_reader
    figures: Dict[str, Any] = {"rows_replaced_by_oov": {}}
    for variant in ("shipped", "training_vocabulary"):
        for namespace, key in EMBEDDINGS if variant == "training_vocabulary" else ():
            vocabulary = model.vocab.get_index_to_token_vocabulary(namespace)
            items = [vocabulary[i] for i in range(len(vocabulary))]
            _, rows = _kept_rows(items, allowed[namespace])
            with torch.no_grad():
                weight = dict(model.named_parameters())[key]
                weight[rows] = weight[1].clone()
            figures["rows_replaced_by_oov"][namespace] = len(rows)
        loader = DataLoader.from_params(
            params=loaded.config["data_loader"].duplicate(), reader=reader, data_path=test_file
        )
        loader.index_with(model.vocab)
        metrics = evaluate(model, loader, cuda_device=-1)
        figures[f"test_f1_{variant}"] = 100 * metrics["f1-measure-overall"]
    figures["test_f1_change"] = figures["test_f1_training_vocabulary"] - figures["test_f1_shipped"]
    return figures
