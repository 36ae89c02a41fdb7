#!/usr/bin/env bash
# The README's demo: train a tagger on the bundled fixtures with the real `allennlp train`, then
# tag a raw sentence with `allennlp predict`. Everything stays offline; outputs go to runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT=runs/demo
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CONLL03_TRAIN_DATA_PATH=fixtures/tagging/conll2003_train.txt
export CONLL03_DEV_DATA_PATH=fixtures/tagging/conll2003_dev.txt
export CONLL03_TEST_DATA_PATH=fixtures/tagging/conll2003_dev.txt
mkdir -p "$OUT"

echo "== 1. allennlp train: NER tagger on fixtures/tagging (log: $OUT/train.log)"
$BIN/allennlp train training_configs/tagging/ner_vanilla.jsonnet -s "$OUT/ner" -f \
  --include-package ldnet_allennlp -o '{"trainer.num_epochs": 15}' > "$OUT/train.log" 2>&1 \
  || { tail -30 "$OUT/train.log"; exit 1; }
python3 -c "import json; m = json.load(open('$OUT/ner/metrics.json')); print('   dev span F1 (fixture): %.3f' % m['best_validation_f1-measure-overall'])"

echo "== 2. allennlp predict on a raw sentence"
echo '{"sentence": "Maria Lopez said Reuters visited Lake Geneva on Monday."}' > "$OUT/input.jsonl"
$BIN/allennlp predict "$OUT/ner/model.tar.gz" "$OUT/input.jsonl" --include-package ldnet_allennlp \
  --silent --output-file "$OUT/predictions.jsonl" 2> "$OUT/predict.log" \
  || { tail -30 "$OUT/predict.log"; exit 1; }
cat "$OUT/predictions.jsonl"
