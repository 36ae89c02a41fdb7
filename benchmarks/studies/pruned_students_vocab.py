"""
Issue 33, item 5: the shipped chunkers were trained with `train_vocab_only: false` and
`test_data_path` set, so test.txt's words and characters got rows in their `tokens` and
`token_characters` embeddings. Those rows were never looked up in training (a test-only word
occurs in no training sentence), so they stayed at their random initial values and carry no
information from the test file; but at test time a test-only word used its own random row where
a tagger with a training-file vocabulary would have used the OOV row.

- `evaluate_with_training_vocabulary` measures what that changes: the shipped archive with every
  row that is not a training-file word or character replaced by the OOV row (which is what a
  vocabulary built from the training file alone gives), evaluated on the test file.
- `restricted_start` writes a serialization directory (vocabulary/ + best.th) with those rows and
  vocabulary entries removed, the start of a chunking student that depends on no test file.

The tag vocabulary is left as it is (it is the task's tag inventory, which the evaluation of any
tagger on test.txt needs).
"""

import shutil
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from ldnet_allennlp.tagging.dataset_readers.conll import ValidatingConll2000DatasetReader

WORDS = "text_field_embedder.token_embedder_tokens.weight"
CHARACTERS = "text_field_embedder.token_embedder_token_characters._embedding._module.weight"


def training_items(train_file: str) -> Tuple[Set[str], Set[str]]:
    """The lowercased words and the characters of every sentence of a CoNLL-2000 training file
    (the held-out tenth included: the shipped chunkers' vocabulary read it too)."""
    words, characters = set(), set()
    for instance in ValidatingConll2000DatasetReader().read(train_file):
        for token in instance["tokens"].tokens:
            words.add(token.text.lower())
            characters.update(token.text)
    return words, characters


def _kept_indices(items: List[str], allowed: Set[str]) -> List[int]:
    """Indices (padding 0 and OOV 1 always) of the vocabulary rows to keep."""
    return [0, 1] + [i for i, item in enumerate(items) if i > 1 and item in allowed]


def _namespace_items(vocabulary_dir: Path, namespace: str) -> List[str]:
    """The items of a padded namespace by index (index 0 is padding, then the file's lines)."""
    lines = (vocabulary_dir / f"{namespace}.txt").read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return ["@@PADDING@@"] + lines


def restricted_start(start: Path, out: Path, train_file: str) -> Dict[str, Any]:
    """`start` (vocabulary/ + best.th) with only the training file's words and characters, in
    `out`; returns how many entries were dropped."""
    import torch

    if (out / "best.th").exists():
        return {}
    words, characters = training_items(train_file)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(start / "vocabulary", partial / "vocabulary")
    state = torch.load(start / "best.th", map_location="cpu")
    dropped = {}
    for namespace, key, allowed in (
        ("tokens", WORDS, words),
        ("token_characters", CHARACTERS, characters),
    ):
        items = _namespace_items(start / "vocabulary", namespace)
        keep = _kept_indices(items, allowed)
        state[key] = state[key][keep].clone()
        (partial / "vocabulary" / f"{namespace}.txt").write_text(
            "".join(items[i] + "\n" for i in keep[1:]), encoding="utf-8"
        )
        dropped[namespace] = len(items) - len(keep)
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

    words, characters = training_items(train_file)
    loaded = load_archive(archive)
    model, reader = loaded.model, loaded.validation_dataset_reader
    figures: Dict[str, Any] = {}
    for variant in ("shipped", "training_vocabulary"):
        if variant == "training_vocabulary":
            replaced = {}
            for namespace, key, allowed in (
                ("tokens", WORDS, words),
                ("token_characters", CHARACTERS, characters),
            ):
                vocabulary = model.vocab.get_index_to_token_vocabulary(namespace)
                rows = [i for i, item in vocabulary.items() if i > 1 and item not in allowed]
                weight = dict(model.named_parameters())[key]
                with torch.no_grad():
                    weight[rows] = weight[1].clone()
                replaced[namespace] = len(rows)
            figures["rows_replaced_by_oov"] = replaced
        loader = DataLoader.from_params(
            params=loaded.config["data_loader"].duplicate(), reader=reader, data_path=test_file
        )
        loader.index_with(model.vocab)
        metrics = evaluate(model, loader, cuda_device=-1)
        figures[f"test_f1_{variant}"] = 100 * metrics["f1-measure-overall"]
    figures["test_f1_change"] = figures["test_f1_training_vocabulary"] - figures["test_f1_shipped"]
    return figures
