"""
Writes the words of a CoNLL file (CoNLL-2003 or CoNLL-2000 columns; `-DOCSTART-` lines skipped),
one sentence per line, separated by spaces: the `dense_lm_text` reader's input, for fine-tuning
the dense LMs on a tagging task's own text (ELMo's domain transfer; issue 4 item 5).

    python scripts/conll_to_lm_text.py ../shared/data/conll2003/eng.train \
        runs/lm_finetune/conll03_train.txt
"""

import argparse
from pathlib import Path


def convert(source: str, target: str) -> int:
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
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    return len(sentences)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a CoNLL file")
    parser.add_argument("target", help="output: one tokenized sentence per line")
    args = parser.parse_args()
    print(f"{convert(args.source, args.target)} sentences -> {args.target}")


if __name__ == "__main__":
    main()
