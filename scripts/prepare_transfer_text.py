#!/usr/bin/env python
"""
The unlabelled news sentences of the pruned-student transfer sets: Reuters-21578 and
BBC News from `lm_text/`, tokenized like CoNLL-03 by `scripts/prepare_lm_corpus.py`'s tokenizer,
sentences of 5 to 60 tokens, exact duplicates removed, shuffled with a fixed seed, one sentence
per line (the input of `allennlp ldnet-tagging-transfer-set`). A prefix of the file is a random
sample, so `--max-sentences N` gives nested transfer sets of growing size.

    python scripts/prepare_transfer_text.py --data-dir ../shared/data/lm_text \\
        --output runs/transfer/news.txt
"""

import argparse
import json
import os
import random

from scripts.prepare_lm_corpus import bbc_documents, reuters_documents, text_to_sentences


def news_sentences(data_dir: str, min_tokens: int = 5, max_tokens: int = 60, seed: int = 13):
    """The deduplicated, shuffled sentences (lists of tokens) of Reuters-21578 and BBC News."""
    seen, sentences = set(), []
    for documents in (reuters_documents(data_dir), bbc_documents(data_dir)):
        for paragraph in documents:
            for tokens in text_to_sentences(paragraph):
                line = " ".join(tokens)
                if min_tokens <= len(tokens) <= max_tokens and line not in seen:
                    seen.add(line)
                    sentences.append(line)
    random.Random(seed).shuffle(sentences)
    return sentences


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.path.join("..", "shared", "data", "lm_text"))
    parser.add_argument("--output", default=os.path.join("runs", "transfer", "news.txt"))
    args = parser.parse_args(argv)
    sentences = news_sentences(args.data_dir)
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    partial = args.output + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in sentences)
    os.replace(partial, args.output)
    report = {"sentences": len(sentences), "tokens": sum(len(s.split()) for s in sentences)}
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
