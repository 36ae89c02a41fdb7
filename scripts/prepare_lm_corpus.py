#!/usr/bin/env python
"""
Builds the LM pre-training corpus for the dense language models.

Reads `lm_text/` (see `shared/data/README.md`) and, with `--more-text`, `lm_text_more/` (English
Wikinews and a Wikipedia sample, see its README.md), and writes one tokenized sentence per line,
tokens separated by single spaces, tokenized like CoNLL-03 (PTB-like: punctuation split off,
clitics `'s` / `n't` split, hyphenated words and numbers such as `1,000` / `3.5` / `U.S.` kept
whole, case kept, double quotes written as `"`):

    OUTPUT/train.txt      Reuters-21578 <BODY>s, BBC News, NLTK ABC, Brown (tags stripped),
                          State of the Union, and with --more-text the training documents of
                          Wikinews and Wikipedia; shuffled (seed 13)
    OUTPUT/dev.txt        a random 0.5% of the lm_text sentences (seed 13), held out for
                          validation during LM training (not in train.txt); the same slice
                          with or without --more-text
    OUTPUT/dev_wikinews.txt, OUTPUT/dev_wikipedia.txt
                          with --more-text: whole held-out documents of each new source (every
                          100th document in reading order), for perplexity per source;
                          `--more-sources wikinews` reads Wikinews alone (its train documents
                          join train.txt, and dev_wikipedia.txt is not written)
    OUTPUT/wikitext2_valid.txt, OUTPUT/wikitext2_test.txt
                          WikiText-2 valid/test, for perplexity only (never trained on)
    OUTPUT/report.json    counts per source (documents, sentences kept, sentences dropped and
                          why, tokens) and per file, and the CoNLL overlap check

Every written sentence passes one filter (`SentenceFilter`): at most `--max-tokens` tokens, not
an exact duplicate of an earlier sentence, and not a sentence of CoNLL-03 dev/test (`eng.testa`,
`eng.testb`) or CoNLL-00 test (exact match of the tokens; the files are read from `--conll-dir`,
by default the folder holding `--data-dir`, and the script stops without them); the CoNLL
sentences found are removed and listed in report.json.

Wikinews (WikiExtractor JSON lines, `text` field) and Wikipedia (WikiExtractor `<doc>` blocks)
are read paragraph by paragraph: HTML entities unescaped, leftover HTML tags removed, and
paragraphs that are not running text dropped: the title line of each Wikipedia article, section
headings (`is_heading`) and leftover wiki markup. WikiExtractor removed the words of links it
could not expand, so sentences with such a gap are dropped (`gap_reasons`). `--gap-sample N`
draws N random Wikinews sentences (seed `--seed`) and writes their text, numbered, to
OUTPUT/gap_sample.txt (to read and label by hand, without the verdicts) and the same N as
references with the filter's verdicts to OUTPUT/gap_sample.json: file, line and record id,
index of the sentence in the record, and the sha1 of its tokens, no text (`gap_sample`). The
precision and recall on such a sample, labelled by hand, are in
benchmarks/results/lm_corpus_gap_filter.json, whose references `read_sample_sentences` reads
back; never copy the sentences themselves into the repository.

WikiText-2 conversion: section headings (`= ... =` lines) and blank lines are dropped;
`@-@`, `@,@`, `@.@` are joined back (`1 @,@ 000` -> `1,000`, `state @-@ of` -> `state-of`),
`` ` `` / `''` quotes become `"`, each paragraph is split into sentences. WikiText-2's own
`<unk>` token is kept verbatim: it is not in our vocabulary, so the LM sees it as its unknown
token (`@@UNKNOWN@@`) like any other out-of-vocabulary word. Perplexities on these files are
therefore over *our* vocabulary (OOV words predicted as one class) and are not comparable with
published WikiText-2 numbers.

Usage:
    python scripts/prepare_lm_corpus.py --data-dir /work/shared/data/lm_text --output runs/lm_data
    python scripts/prepare_lm_corpus.py --data-dir /work/shared/data/lm_text \\
        --more-text /work/shared/data/lm_text_more --output runs/lm_corpus_more
    python scripts/prepare_lm_corpus.py --data-dir /work/shared/data/lm_text \\
        --more-text /work/shared/data/lm_text_more --more-sources wikinews \\
        --output runs/lm_corpus_news
"""

import argparse
import glob
import hashlib
import html
import json
import os
import random
import re
import sys
import time
import zipfile
from typing import Dict, Iterator, List, Optional, Set, Tuple

from allennlp.common.tqdm import Tqdm

from ldnet_allennlp.tagging.dataset_readers.conll import read_conll_sentences

# --------------------------------------------------------------------------------------------
# Tokenizer: a small PTB-like regex tokenizer (NLTK's Treebank rules without the quote rewriting),
# fast enough for ~6M tokens in well under a minute.

_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "mt",
    "gen",
    "gov",
    "sen",
    "rep",
    "col",
    "lt",
    "sgt",
    "capt",
    "cmdr",
    "adm",
    "rev",
    "hon",
    "pres",
    "inc",
    "corp",
    "co",
    "ltd",
    "bros",
    "plc",
    "no",
    "nos",
    "vs",
    "v",
    "etc",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "approx",
    "dept",
    "est",
    "fig",
    "al",
    "ave",
    "blvd",
    "ft",
    "mln",
    "bln",
    "pct",
    "cts",
    "dlrs",
    "e.g",
    "i.e",
    "u.s",
    "u.k",
    "u.n",
    "a.m",
    "p.m",
}

_TOKEN = re.compile(
    r"""
    (?:[A-Za-z]\.){2,}                      # U.S.  U.N.  a.m.
  | \d+(?:[.,:/]\d+)+                       # 1,000  3.5  10:30  1/2
  | [A-Za-z]+?(?=n't\b)                     # do|n't, is|n't
  | n't\b
  | '(?:s|S|re|RE|ve|VE|ll|LL|d|D|m|M)\b    # 's  're  've  'll  'd  'm
  | \w+(?:[-&]\w+|'(?!(?:[sdmtSDMT]|re|RE|ve|VE|ll|LL)\b)\w+)*  # words, Urdu-speaking, O'Neill
  | \.\.\.|--+|``|''
  | \S                                       # any other single character
    """,
    re.VERBOSE | re.UNICODE,
)


def tokenize(text: str) -> List[str]:
    """PTB-like tokens of `text` (one sentence or more)."""
    tokens = _TOKEN.findall(text)
    result = []
    for i, token in enumerate(tokens):
        if token in ("``", "''"):
            token = '"'
        elif token == "'" and i > 0 and result and result[-1] == "'":
            # '' typed as two single quotes
            result[-1] = '"'
            continue
        # Re-attach the period of abbreviations (Mr . -> Mr.) when it is not sentence-final.
        if token == "." and result and result[-1].lower() in _ABBREVIATIONS and i + 1 < len(tokens):
            result[-1] += "."
            continue
        result.append(token)
    return result


_SENTENCE_END = {".", "!", "?"}
_CLOSERS = {'"', "'", ")", "]", "}"}


def split_sentences(tokens: List[str]) -> List[List[str]]:
    """Splits a token list after `.`, `!`, `?` (and trailing closing quotes/brackets) when the
    next token starts with an upper-case letter, a digit, or an opening quote."""
    sentences, current = [], []
    i = 0
    while i < len(tokens):
        current.append(tokens[i])
        if tokens[i] in _SENTENCE_END:
            while i + 1 < len(tokens) and tokens[i + 1] in _CLOSERS:
                i += 1
                current.append(tokens[i])
            following = tokens[i + 1] if i + 1 < len(tokens) else ""
            if (
                not following
                or following[0].isupper()
                or following[0].isdigit()
                or following
                in (
                    '"',
                    "(",
                )
            ):
                sentences.append(current)
                current = []
        i += 1
    if current:
        sentences.append(current)
    return sentences


def text_to_sentences(text: str) -> List[List[str]]:
    return split_sentences(tokenize(text))


# --------------------------------------------------------------------------------------------
# Sources. Each yields paragraphs (str) or already-split sentences (list of tokens).

_BODY = re.compile(r"<BODY>(.*?)</BODY>", re.DOTALL)


def reuters_documents(data_dir: str) -> Iterator[str]:
    for path in sorted(glob.glob(os.path.join(data_dir, "reuters21578", "reut2-*.sgm"))):
        with open(path, encoding="latin-1") as sgm:
            content = sgm.read()
        for body in _BODY.findall(content):
            body = re.sub(r"&#\d+;", " ", body)  # &#3; end-of-body and control characters
            body = html.unescape(body)
            body = re.sub(r"\s*\b(Reuter|REUTER)\s*$", "", body.strip())
            # Paragraphs start with indented lines; lines inside a paragraph are wrapped.
            for paragraph in re.split(r"\n\s{2,}|\n\s*\n", body):
                yield " ".join(paragraph.split())


def bbc_documents(data_dir: str) -> Iterator[str]:
    for path in sorted(glob.glob(os.path.join(data_dir, "bbc", "*", "*.txt"))):
        with open(path, "rb") as article:
            raw = article.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # sport/199.txt has one Latin-1 byte (a pound sign)
            text = raw.decode("latin-1")
        for paragraph in text.split("\n"):
            if paragraph.strip():
                yield paragraph.strip()


def zip_members(data_dir: str, name: str) -> Iterator[str]:
    with zipfile.ZipFile(os.path.join(data_dir, "nltk_data", f"{name}.zip")) as archive:
        for member in sorted(archive.namelist()):
            base = os.path.basename(member)
            if not base or base.upper().startswith("README") or base == "cats.txt":
                continue
            yield archive.read(member).decode("utf-8", errors="replace")


def abc_documents(data_dir: str) -> Iterator[str]:
    for text in zip_members(data_dir, "abc"):
        for line in text.split("\n"):
            if line.strip():
                yield line.strip()


def state_union_documents(data_dir: str) -> Iterator[str]:
    for text in zip_members(data_dir, "state_union"):
        for paragraph in re.split(r"\n\s*\n", text):
            if paragraph.strip():
                yield " ".join(paragraph.split())


def brown_documents(data_dir: str) -> Iterator[str]:
    """Brown is `word/tag` with one sentence per (tab-indented) line: strip the tags."""
    for text in zip_members(data_dir, "brown"):
        for line in text.split("\n"):
            words = [item.rsplit("/", 1)[0] for item in line.split()]
            if words:
                yield " ".join(words)


SOURCES = {
    "reuters21578": reuters_documents,
    "bbc": bbc_documents,
    "abc": abc_documents,
    "brown": brown_documents,
    "state_union": state_union_documents,
}


def wikitext_sentences(path: str) -> Iterator[List[str]]:
    with open(path, encoding="utf-8") as wiki:
        for line in wiki:
            line = line.strip()
            if not line or (line.startswith("=") and line.endswith("=")):
                continue
            line = re.sub(r" @([-,.])@ ", r"\1", line)
            tokens = ['"' if t in ("``", "''") else t for t in line.split()]
            yield from split_sentences(tokens)


# --------------------------------------------------------------------------------------------
# WikiExtractor sources (lm_text_more/). Each yields the paragraphs of one document at a time.


def wikinews_records(more_dir: str) -> Iterator[Tuple[str, int, str, List[str]]]:
    """JSON lines with a `text` field of `\n`-separated paragraphs; records without text skipped.
    Yields (file relative to `more_dir`, line number from 1, record `id`, paragraphs)."""
    for path in sorted(glob.glob(os.path.join(more_dir, "wikinews", "text", "*", "wiki_*"))):
        relative_path = os.path.relpath(path, more_dir).replace(os.sep, "/")
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                record = json.loads(line)
                if record["text"].strip():
                    yield relative_path, number, record["id"], record["text"].split("\n")


def wikinews_documents(more_dir: str) -> Iterator[List[str]]:
    """The paragraphs of each Wikinews record with text."""
    for _, _, _, paragraphs in wikinews_records(more_dir):
        yield paragraphs


def wikipedia_documents(more_dir: str) -> Iterator[List[str]]:
    """`<doc id=... title=...>` ... `</doc>` blocks, one paragraph a line; the first line of each
    block repeats the title and is left out."""
    for path in sorted(glob.glob(os.path.join(more_dir, "wikipedia", "text", "*", "wiki_*"))):
        with open(path, encoding="utf-8") as lines:
            paragraphs: List[str] = []
            for line in lines:
                line = line.rstrip("\n")
                if line.startswith("<doc "):
                    paragraphs = []
                elif line == "</doc>":
                    yield paragraphs[1:]
                else:
                    paragraphs.append(line)


MORE_SOURCES = {"wikinews": wikinews_documents, "wikipedia": wikipedia_documents}

_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_WIKI_MARKUP = re.compile(r"\[\[|\]\]|\{\{|\}\}|__[A-Z]+__|^\"\w+\":|^\W*$")
_SENTENCE_INSIDE = re.compile(r"[.!?:;\"]")


def clean_paragraph(paragraph: str) -> str:
    """HTML entities unescaped (`&lt;` -> `<`), the HTML tags they spelt removed, whitespace
    collapsed."""
    return " ".join(_HTML_TAG.sub(" ", html.unescape(paragraph)).split())


def is_heading(paragraph: str) -> bool:
    """WikiExtractor writes a section heading as a paragraph of its own ending in `.`
    ("History.", "Related news."): at most 6 words and no other sentence punctuation."""
    words = paragraph.split()
    return (
        0 < len(words) <= 6
        and paragraph.endswith(".")
        and not _SENTENCE_INSIDE.search(paragraph[:-1])
    )


# A space before `,` `;` `:` `.` in WikiExtractor's text is where a link's words were removed
# ("the , was"). Tokenization loses the space, so it is marked by GAP_MARK, a character that is
# never in the text and that the tokenizer keeps as a token of its own.
GAP_MARK = "\ue000"
_SPACED_PUNCTUATION = re.compile(r"(?<=\w) +(?=[,;:.](?:\s|$))")

_ARTICLES = {"the", "a", "an"}
_CLOSING = {",", ".", ";", ":", ")", "'s"}
_FUNCTION_WORDS = {"of", "in", "on", "at", "to", "for", "from", "with", "by", "and", "or", "that"}
_FUNCTION_WORDS |= {"which", "is", "was", "were", "are", "has", "have", "had", "said", "says"}
_AFTER_PREPOSITION = {
    "of": _CLOSING - {":"} | {"and", "in", "on", "of", "from", "with", "for", "has", "was"},
    "at": _CLOSING - {":"} | {"in", "on", "at", "of"},
    "from": {",", ";", ")", "'s", "to", "and", "in", "for"},
    "by": {",", ".", ";", ")", "'s"},
    "between": {",", ".", "and"},
    "including": {",", ".", ";", "and"},
    "during": {",", ".", ";", ")"},
}
_PLACE_PREPOSITIONS = {"in", "near", "into", "outside", "like"}
_CONJUNCTIONS = {"and", "or"}
_TITLES = {"Mr.", "Mrs.", "Ms.", "Dr."}
_EMPTY = {(",", ","), (",", "."), (",", ";"), (";", ","), (",", ")"), (";", ")"), (",", "'s")}
_EMPTY |= {("(", ")"), ("(", ","), ("(", ";"), ("(", "."), ("(", "'s")}


def gap_reasons(tokens: List[str]) -> List[str]:
    """
    Why a tokenized sentence looks like WikiExtractor removed words from it (an empty list when
    it does not). Each reason is a place where a name or link text must have stood:

    - `spacing`: a space before `,` `;` `:` `.` in the raw text (`GAP_MARK`; "the , was");
    - `start`: the sentence starts with closing punctuation or a lower-case word ("has said");
    - `end`: it ends, unpunctuated, on an article, "of", "at", "from", "and" or "or";
    - `article`: an article before punctuation, "(" or a function word ("the of", "the ,",
      "an to", "the ( FBI )"), or "an" before a consonant ("an passenger");
    - `preposition`: "of", "at", "from", "by", "between", "including", "during" before punctuation,
      `'s`, a conjunction, another preposition or a verb ("of ,", "at in", "of 's", "between
      and", "of has");
    - `place`: "in", "near", "into", "outside", "like" before a comma and a capitalised word
      ("in , Nevada");
    - `conjunction`: "and" / "or" before `.` `)` `;` `'s` or another conjunction ("and .");
    - `punctuation`: punctuation around nothing (", ,", ", .", "( )", "( ;", '" "' not after a
      sentence end);
    - `title`: "Mr." / "Mrs." / "Ms." / "Dr." before punctuation or a verb ("Dr. , director").
    """
    reasons = []
    if GAP_MARK in tokens:
        reasons.append("spacing")
        tokens = [token for token in tokens if token != GAP_MARK]
    if not tokens:
        return reasons
    first, last = tokens[0], tokens[-1]
    if first in _CLOSING or (first.isalpha() and first.islower()):
        reasons.append("start")
    if last in _ARTICLES or last in ("of", "at", "from", "and", "or"):
        reasons.append("end")
    for i, (word, following) in enumerate(zip(tokens, tokens[1:])):
        previous = tokens[i - 1] if i else ""
        after = tokens[i + 2] if i + 2 < len(tokens) else ""
        if (word in _ARTICLES or (i == 0 and word.lower() in _ARTICLES)) and previous != "(":
            if (
                following in _CLOSING | _FUNCTION_WORDS | {"("}
                and (following != "." or not after.islower())  # "a . m ." is a.m.
            ) or (word == "an" and following.isalpha() and following[0] in "bcdfgjklmnpqrstvwxyz"):
                reasons.append("article")
        if following in _AFTER_PREPOSITION.get(word, ()):
            reasons.append("preposition")
        if word in _PLACE_PREPOSITIONS and following == "," and after[:1].isupper():
            reasons.append("place")
        if word in _CONJUNCTIONS and previous != "(":
            if following in (".", ")", ";", "'s") or following in _CONJUNCTIONS:
                reasons.append("conjunction")
        if (word, following) in _EMPTY or (
            word == following == '"' and previous not in (".", "!", "?")
        ):
            reasons.append("punctuation")
        if word in _TITLES and (following in _CLOSING or following in ("said", "says", "has")):
            reasons.append("title")
    return list(dict.fromkeys(reasons))


def wikiextractor_sentences(paragraph: str, stats: Dict[str, int]) -> Iterator[List[str]]:
    """The tokenized sentences of one raw WikiExtractor paragraph of running text, with a
    `GAP_MARK` token where the text had a space before punctuation; a heading or markup paragraph
    yields none and is counted in `stats` (`headings_removed`, `markup_removed`)."""
    paragraph = clean_paragraph(paragraph)
    if not paragraph:
        return
    if is_heading(paragraph):
        stats["headings_removed"] += 1
    elif _WIKI_MARKUP.search(paragraph):
        stats["markup_removed"] += 1
    else:
        yield from split_sentences(tokenize(_SPACED_PUNCTUATION.sub(f" {GAP_MARK} ", paragraph)))


# --------------------------------------------------------------------------------------------
# The filter every written sentence passes, and the CoNLL sentences it keeps out.

HELD_OUT_CONLL = {  # relative to --conll-dir: (file, number of columns)
    "conll03_dev": ("conll2003/eng.testa", 4),
    "conll03_test": ("conll2003/eng.testb", 4),
    "conll00_test": ("conll2000/test.txt", 3),
}


def held_out_conll_sentences(conll_dir: str) -> Dict[str, Set[str]]:
    """The tokenized sentences (tokens joined by spaces) of CoNLL-03 dev/test and CoNLL-00
    test, by set name."""
    sentences = {}
    for name, (relative_path, columns) in HELD_OUT_CONLL.items():
        path = os.path.join(conll_dir, relative_path)
        rows = read_conll_sentences(path, columns, f"{columns} CoNLL columns", skip_docstart=True)
        sentences[name] = {" ".join(row[0] for row in sentence) for _, sentence in rows}
    return sentences


class SentenceFilter:
    """
    Drops a sentence with more than `max_tokens` tokens, an exact duplicate of a sentence seen
    before, and a held-out CoNLL sentence (exact match of the tokens), and records the CoNLL
    sentences found.
    """

    def __init__(self, max_tokens: int, held_out: Dict[str, Set[str]]) -> None:
        self.max_tokens = max_tokens
        self.held_out = held_out
        self.held_out_found: Dict[str, Set[str]] = {name: set() for name in held_out}
        self.seen: Set[str] = set()

    def drop_reason(self, sentence: List[str]) -> Optional[str]:
        """`None` to keep the sentence, else the stats key that counts why it is dropped."""
        if len(sentence) > self.max_tokens:
            return "too_long_removed"
        key = " ".join(sentence)
        if key in self.seen:
            return "duplicates_removed"
        self.seen.add(key)
        found = [name for name, sentences in self.held_out.items() if key in sentences]
        for name in found:
            self.held_out_found[name].add(key)
        return "conll_overlap_removed" if found else None


FILTER_COUNTS = ("too_long_removed", "conll_overlap_removed", "duplicates_removed")


def new_stats(*names: str) -> Dict[str, int]:
    """Zero counts of `names`, of what `SentenceFilter` drops, and of sentences and tokens kept."""
    return dict.fromkeys(names + FILTER_COUNTS + ("sentences", "tokens"), 0)


def read_more_text(
    name: str, more_dir: str, dev_every: int, keep: SentenceFilter
) -> Tuple[Dict[str, int], List[str], List[str]]:
    """Stats, training sentences and dev sentences of one WikiExtractor source; every
    `dev_every`-th document (in reading order) is held out as dev."""
    stats = new_stats(
        "documents", "dev_documents", "headings_removed", "markup_removed", "gap_removed"
    )
    stats.update(dev_sentences=0, dev_tokens=0)
    train: List[str] = []
    dev: List[str] = []
    for paragraphs in Tqdm.tqdm(MORE_SOURCES[name](more_dir), desc=f"{name:>12}", unit=" doc"):
        stats["documents"] += 1
        is_dev = stats["documents"] % dev_every == 0
        stats["dev_documents"] += is_dev
        for paragraph in paragraphs:
            for sentence in wikiextractor_sentences(paragraph, stats):
                reason = "gap_removed" if gap_reasons(sentence) else keep.drop_reason(sentence)
                if reason:
                    stats[reason] += 1
                    continue
                stats["sentences"] += 1
                stats["tokens"] += len(sentence)
                if is_dev:
                    stats["dev_sentences"] += 1
                    stats["dev_tokens"] += len(sentence)
                (dev if is_dev else train).append(" ".join(sentence))
    read = stats["gap_removed"] + stats["sentences"] + sum(stats[key] for key in FILTER_COUNTS)
    stats["gap_removed_fraction"] = round(stats["gap_removed"] / max(read, 1), 4)
    return stats, train, dev


def document_sentences(paragraphs: List[str]) -> List[List[str]]:
    """The sentences of one WikiExtractor document as the gap filter sees them (tokenized, with
    `GAP_MARK`s; headings and markup dropped, no other filter)."""
    dropped = {"headings_removed": 0, "markup_removed": 0}
    return [s for paragraph in paragraphs for s in wikiextractor_sentences(paragraph, dropped)]


def sentence_sha1(tokens: List[str]) -> str:
    """The sha1 (hex) of a tokenized sentence: its tokens but `GAP_MARK` joined by spaces, UTF-8."""
    text = " ".join(token for token in tokens if token != GAP_MARK)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def gap_sample(more_dir: str, size: int, seed: int) -> List[Tuple[dict, List[str]]]:
    """
    A random sample (`seed`) of Wikinews sentences as the gap filter sees them, each with the
    filter's verdict: the material for labelling the filter's precision and recall by hand.

    Each item is a (reference, tokens) pair. The reference names the sentence without holding
    its text (Wikinews text is never copied into the repository): `file` (relative to
    `more_dir`), `line` (from 1) and `doc_id` of its JSON record, `sentence_index` (its index
    in `document_sentences` of the record's paragraphs) and `sha1` (`sentence_sha1`);
    `read_sample_sentences` reads the sentences back.
    """
    sentences: List[Tuple[dict, List[str]]] = []
    for relative_path, number, doc_id, paragraphs in wikinews_records(more_dir):
        for index, tokens in enumerate(document_sentences(paragraphs)):
            reference = {"file": relative_path, "line": number, "doc_id": doc_id}
            reference["sentence_index"] = index
            sentences.append((reference, tokens))
    sample = []
    for reference, tokens in random.Random(seed).sample(sentences, size):
        reasons = gap_reasons(tokens)
        reference = dict(
            reference,
            sha1=sentence_sha1(tokens),
            space_before_punctuation=GAP_MARK in tokens,
            rule=bool(reasons),
            reasons=reasons,
        )
        sample.append((reference, tokens))
    return sample


def read_sample_sentences(more_dir: str, references: List[dict]) -> List[List[str]]:
    """The tokenized sentences (with `GAP_MARK`s) that `gap_sample` references point at, read
    back from the Wikinews files under `more_dir`. Raises `ValueError` when a reference's line
    holds another record or its document has fewer sentences; the caller compares `sha1`."""
    records: Dict[Tuple[str, int], dict] = {}
    for relative_path in sorted({reference["file"] for reference in references}):
        wanted = {
            reference["line"] for reference in references if reference["file"] == relative_path
        }
        with open(os.path.join(more_dir, relative_path), encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if number in wanted:
                    records[relative_path, number] = json.loads(line)
    sentences = []
    for reference in references:
        record = records.get((reference["file"], reference["line"]))
        if record is None or record["id"] != reference["doc_id"]:
            raise ValueError(f"no Wikinews record {reference['doc_id']} at {reference}")
        document = document_sentences(record["text"].split("\n"))
        if reference["sentence_index"] >= len(document):
            raise ValueError(f"{reference}: the document has {len(document)} sentences")
        sentences.append(document[reference["sentence_index"]])
    return sentences


def write_lines(path: str, sentences: List[str]) -> int:
    """Writes one sentence (tokens joined by spaces) a line; returns the number of tokens."""
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(sentence + "\n" for sentence in sentences)
    return sum(sentence.count(" ") + 1 for sentence in sentences)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/work/shared/data/lm_text")
    parser.add_argument("--more-text", help="lm_text_more/ (Wikinews, Wikipedia), if wanted")
    parser.add_argument(
        "--more-sources",
        default=",".join(MORE_SOURCES),
        help=f"the sources of --more-text to read, comma-separated (default: all of "
        f"{', '.join(MORE_SOURCES)})",
    )
    parser.add_argument(
        "--conll-dir",
        help="the folder holding conll2003/eng.testa, eng.testb and conll2000/test.txt, kept "
        "out of the corpus (default: the folder holding --data-dir)",
    )
    parser.add_argument("--output", default="runs/lm_data")
    parser.add_argument("--dev-fraction", type=float, default=0.005)
    parser.add_argument("--more-dev-every", type=int, default=100, help="dev: every N-th doc")
    parser.add_argument("--max-tokens", type=int, default=150, help="drop longer sentences")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--gap-sample", type=int, default=0, help="write N Wikinews sentences to gap_sample.json"
    )
    args = parser.parse_args(argv)
    conll_dir = args.conll_dir or os.path.dirname(os.path.abspath(args.data_dir))
    for relative_path, _ in HELD_OUT_CONLL.values():
        if not os.path.isfile(os.path.join(conll_dir, relative_path)):
            parser.error(f"{os.path.join(conll_dir, relative_path)} not found: set --conll-dir")
    if args.more_text and not os.path.isdir(args.more_text):
        parser.error(f"--more-text {args.more_text} is not a directory")
    if args.gap_sample and not args.more_text:
        parser.error("--gap-sample samples Wikinews: set --more-text")
    more_sources = [name.strip() for name in args.more_sources.split(",") if name.strip()]
    unknown = sorted(set(more_sources) - set(MORE_SOURCES))
    if unknown or not more_sources:
        parser.error(
            f"--more-sources {args.more_sources!r}: expected some of {', '.join(MORE_SOURCES)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    if args.gap_sample and "wikinews" not in more_sources:
        parser.error("--gap-sample samples Wikinews: keep it in --more-sources")

    start = time.time()
    os.makedirs(args.output, exist_ok=True)
    report = {"sources": {}, "files": {}}
    keep = SentenceFilter(args.max_tokens, held_out_conll_sentences(conll_dir))
    lm_text: List[Tuple[str, bool]] = []  # (sentence, not a CoNLL sentence)
    for name, reader in SOURCES.items():
        stats = new_stats()
        for paragraph in Tqdm.tqdm(reader(args.data_dir), desc=f"{name:>12}", unit=" par"):
            for sentence in text_to_sentences(paragraph):
                reason = keep.drop_reason(sentence)
                if reason in (None, "conll_overlap_removed"):
                    lm_text.append((" ".join(sentence), reason is None))
                if reason:
                    stats[reason] += 1
                else:
                    stats["sentences"] += 1
                    stats["tokens"] += len(sentence)
        report["sources"][name] = stats
        print(name, stats, file=sys.stderr)

    # The dev slice is drawn before the CoNLL sentences are removed, so that dev.txt stays the
    # slice the LMs trained on lm_text alone were validated on, and was never trained on.
    random.Random(args.seed).shuffle(lm_text)
    num_dev = int(len(lm_text) * args.dev_fraction)
    splits = {
        "dev.txt": [sentence for sentence, kept in lm_text[:num_dev] if kept],
        "train.txt": [sentence for sentence, kept in lm_text[num_dev:] if kept],
    }
    if args.more_text:
        for name in [name for name in MORE_SOURCES if name in more_sources]:
            stats, train, splits[f"dev_{name}.txt"] = read_more_text(
                name, args.more_text, args.more_dev_every, keep
            )
            splits["train.txt"] += train
            report["sources"][name] = stats
            print(name, stats, file=sys.stderr)
        random.Random(args.seed).shuffle(splits["train.txt"])
    for split in ("valid", "test"):
        path = os.path.join(args.data_dir, "wikitext-2", f"{split}.txt")
        splits[f"wikitext2_{split}.txt"] = [" ".join(s) for s in wikitext_sentences(path)]
    for filename, lines in splits.items():
        tokens = write_lines(os.path.join(args.output, filename), lines)
        report["files"][filename] = {"sentences": len(lines), "tokens": tokens}
    report["conll_overlap"] = {
        name: {"sentences": len(keep.held_out[name]), "found_and_removed": sorted(found)}
        for name, found in keep.held_out_found.items()
    }
    if args.gap_sample:
        sample = gap_sample(args.more_text, args.gap_sample, args.seed)
        with open(os.path.join(args.output, "gap_sample.json"), "w", encoding="utf-8") as out:
            json.dump([reference for reference, _ in sample], out, indent=1)
        with open(os.path.join(args.output, "gap_sample.txt"), "w", encoding="utf-8") as out:
            for number, (_, tokens) in enumerate(sample):
                text = " ".join(token for token in tokens if token != GAP_MARK)
                out.write(f"{number}\t{text}\n")
    report["seconds"] = round(time.time() - start, 1)
    report["data_dir"] = os.path.abspath(args.data_dir)
    report["more_text"] = args.more_text and os.path.abspath(args.more_text)
    report["more_sources"] = (
        [n for n in MORE_SOURCES if n in more_sources] if args.more_text else []
    )
    report["conll_dir"] = conll_dir
    with open(os.path.join(args.output, "report.json"), "w") as out:
        json.dump(report, out, indent=2)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
