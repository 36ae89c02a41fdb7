#!/usr/bin/env python
"""
Builds the LM pre-training corpus for the dense language models (issue 3).

Reads `lm_text/` (see `shared/data/README.md`) and writes one tokenized sentence per line,
tokens separated by single spaces, tokenized like CoNLL-03 (PTB-like: punctuation split off,
clitics `'s` / `n't` split, hyphenated words and numbers such as `1,000` / `3.5` / `U.S.` kept
whole, case kept, double quotes written as `"`):

    OUTPUT/train.txt      Reuters-21578 <BODY>s, BBC News, NLTK ABC, Brown (tags stripped),
                          State of the Union; exact duplicate sentences removed
    OUTPUT/dev.txt        a random 0.5% of those sentences (seed 13), held out for validation
                          during LM training (not in train.txt)
    OUTPUT/wikitext2_valid.txt, OUTPUT/wikitext2_test.txt
                          WikiText-2 valid/test, for perplexity only (never trained on)
    OUTPUT/report.json    sentence and token counts per source and per file

WikiText-2 conversion: section headings (`= ... =` lines) and blank lines are dropped;
`@-@`, `@,@`, `@.@` are joined back (`1 @,@ 000` -> `1,000`, `state @-@ of` -> `state-of`),
`` ` `` / `''` quotes become `"`, each paragraph is split into sentences. WikiText-2's own
`<unk>` token is kept verbatim: it is not in our vocabulary, so the LM sees it as its unknown
token (`@@UNKNOWN@@`) like any other out-of-vocabulary word. Perplexities on these files are
therefore over *our* vocabulary (OOV words predicted as one class) and are not comparable with
published WikiText-2 numbers.

Usage:
    python scripts/prepare_lm_corpus.py --data-dir /work/shared/data/lm_text --output runs/lm_data
"""

import argparse
import glob
import html
import json
import os
import random
import re
import sys
import time
import zipfile
from typing import Iterator, List

from allennlp.common.tqdm import Tqdm

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


def write_lines(path: str, sentences: List[List[str]]) -> int:
    tokens = 0
    with open(path, "w", encoding="utf-8") as out:
        for sentence in sentences:
            out.write(" ".join(sentence) + "\n")
            tokens += len(sentence)
    return tokens


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/work/shared/data/lm_text")
    parser.add_argument("--output", default="runs/lm_data")
    parser.add_argument("--dev-fraction", type=float, default=0.005)
    parser.add_argument("--max-tokens", type=int, default=150, help="drop longer sentences")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    start = time.time()
    os.makedirs(args.output, exist_ok=True)
    report = {"sources": {}, "files": {}}
    seen = set()
    sentences: List[List[str]] = []
    for name, reader in SOURCES.items():
        stats = {"sentences": 0, "tokens": 0, "duplicates_removed": 0, "too_long_removed": 0}
        for paragraph in Tqdm.tqdm(reader(args.data_dir), desc=f"{name:>12}", unit=" par"):
            for sentence in text_to_sentences(paragraph):
                if len(sentence) > args.max_tokens:
                    stats["too_long_removed"] += 1
                    continue
                key = " ".join(sentence)
                if key in seen:
                    stats["duplicates_removed"] += 1
                    continue
                seen.add(key)
                sentences.append(sentence)
                stats["sentences"] += 1
                stats["tokens"] += len(sentence)
        report["sources"][name] = stats
        print(name, stats, file=sys.stderr)

    rng = random.Random(args.seed)
    rng.shuffle(sentences)
    num_dev = int(len(sentences) * args.dev_fraction)
    splits = {"dev.txt": sentences[:num_dev], "train.txt": sentences[num_dev:]}
    data_dir = args.data_dir
    for split in ("valid", "test"):
        path = os.path.join(data_dir, "wikitext-2", f"{split}.txt")
        splits[f"wikitext2_{split}.txt"] = list(wikitext_sentences(path))
    for filename, split_sentences_ in splits.items():
        tokens = write_lines(os.path.join(args.output, filename), split_sentences_)
        report["files"][filename] = {"sentences": len(split_sentences_), "tokens": tokens}
    report["seconds"] = round(time.time() - start, 1)
    report["data_dir"] = os.path.abspath(data_dir)
    with open(os.path.join(args.output, "report.json"), "w") as out:
        json.dump(report, out, indent=2)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
