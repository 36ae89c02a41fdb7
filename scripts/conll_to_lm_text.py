"""
Writes the words of a CoNLL file (CoNLL-2003 or CoNLL-2000 columns; `-DOCSTART-` lines skipped),
one sentence per line, separated by spaces: the `dense_lm_text` reader's input, for fine-tuning
the dense LMs on a tagging task's own text (ELMo's domain transfer).

    python scripts/conll_to_lm_text.py ../shared/data/conll2003/eng.train \
        runs/lm_finetune/conll03_train.txt

`--holdout exclude|only` (with `--holdout-every N`, default 10) splits the file the way the
`ldnet_conll2000` reader's `holdout` does (sentence i is held out when i % N == N - 1), so an LM
fine-tuned on CoNLL-00 train.txt never reads the held-out tenth the chunkers are chosen on:

    python scripts/conll_to_lm_text.py ../shared/data/conll2000/train.txt \
        runs/lm_finetune/conll00_train.txt --holdout exclude
"""

import argparse
from pathlib import Path
from typing import Optional

from ldnet_allennlp.tagging.dataset_readers.conll import keep_sentence


def convert(
    source: str, target: str, holdout: Optional[str] = None, holdout_every: int = 10
) -> int:
    sentences, words = [], []
    with open(source, encoding="utf-8") as lines:
        for line in lines:
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if words:
                    sentences.append(" ".join(words))
                words = []
                continue
            words.append(columns[0])
    if words:
        sentences.append(" ".join(words))
    sentences = [s for i, s in enumerate(sentences) if keep_sentence(i, holdout, holdout_every)]
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    return len(sentences)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a CoNLL file")
    parser.add_argument("target", help="output: one tokenized sentence per line")
    parser.add_argument(
        "--holdout",
        choices=["exclude", "only"],
        help="leave out (exclude) or keep only (only) the held-out sentences",
    )
    parser.add_argument("--holdout-every", type=int, default=10, help="every N-th sentence")
    args = parser.parse_args()
    if args.holdout_every < 2:
        parser.error(f"--holdout-every must be >= 2, got {args.holdout_every}")
    count = convert(args.source, args.target, args.holdout, args.holdout_every)
    print(f"{count} sentences -> {args.target}")


if __name__ == "__main__":
    main()
