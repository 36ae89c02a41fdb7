#!/usr/bin/env bash
# The README's demo, with the real `allennlp` commands (all offline):
#   0. the shipped NER tagger and chunker (pretrained/) tag new sentences          (ldnet-tag)
# then the whole LD-Net chain on the bundled fixtures:
#   1. pre-train a tiny forward and backward dense LM           (allennlp train)
#   2. train the LD-Net NER tagger on their features            (allennlp train)
#   3. prune: train the layer masks under LD-Net's penalty      (allennlp train + layer_pruning)
#   4. export the physically pruned tagger                      (allennlp ldnet-prune)
#   5. tag a raw sentence with the pruned archive               (allennlp predict)
# Outputs (and every log) go to runs/demo/. The fixtures are tiny: the tags of step 5 are not
# meant to be right, the commands are (step 0's are the real model's).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT=runs/demo
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CONLL03_TRAIN_DATA_PATH=fixtures/tagging/conll2003_train.txt
export CONLL03_DEV_DATA_PATH=fixtures/tagging/conll2003_dev.txt
export CONLL03_TEST_DATA_PATH=fixtures/tagging/conll2003_dev.txt
export FORWARD_LM_ARCHIVE=$OUT/lm_forward/model.tar.gz
export BACKWARD_LM_ARCHIVE=$OUT/lm_backward/model.tar.gz
export NER_LDNET_PHASE1_DIR=$OUT/ner_ldnet
rm -rf "$OUT"
mkdir -p "$OUT"

run() {  # run LOG COMMAND...: quiet on success, the log's tail on failure
  local log=$1
  shift
  "$@" > "$OUT/$log" 2>&1 || { tail -40 "$OUT/$log"; echo "failed: $* (log: $OUT/$log)"; exit 1; }
}

echo "== 0. allennlp ldnet-tag: the shipped NER tagger (pretrained/MANIFEST.json: ner) on new sentences"
$BIN/allennlp ldnet-tag --model ner --include-package ldnet_allennlp \
  "Chancellor Helmut Kohl met Jacques Chirac in Bonn." \
  "Maria Lopez said Reuters visited Lake Geneva on Monday." \
  "Shares of Siemens rose 3 percent in Frankfurt after the European Commission approved the deal." \
  > $OUT/ldnet_tag.txt 2> $OUT/ldnet_tag.log || { tail -30 $OUT/ldnet_tag.log; exit 1; }
sed 's/^/   /' $OUT/ldnet_tag.txt
echo "   ... and the shipped chunker (pretrained/MANIFEST.json: chunk):"
$BIN/allennlp ldnet-tag --model chunk --include-package ldnet_allennlp \
  "The quick brown fox jumped over the lazy dog." \
  > $OUT/ldnet_chunk.txt 2> $OUT/ldnet_chunk.log || { tail -30 $OUT/ldnet_chunk.log; exit 1; }
sed 's/^/   /' $OUT/ldnet_chunk.txt

echo "== 1. allennlp train: tiny forward and backward dense LMs on fixtures/lm"
run lm_forward.log $BIN/allennlp train fixtures/lm/dense_lm.jsonnet -s $OUT/lm_forward \
  --include-package ldnet_allennlp
run lm_backward.log $BIN/allennlp train fixtures/lm/dense_lm.jsonnet -s $OUT/lm_backward \
  --include-package ldnet_allennlp -o '{"model.direction": "backward"}'

echo "== 2. allennlp train: LD-Net NER tagger (training_configs/tagging/ner_ldnet.jsonnet)"
run ner_ldnet.log $BIN/allennlp train training_configs/tagging/ner_ldnet.jsonnet \
  -s "$NER_LDNET_PHASE1_DIR" --include-package ldnet_allennlp -o '{"trainer.num_epochs": 10}'

echo "== 3. allennlp train: pruning (training_configs/tagging/ner_ldnet_prune.jsonnet)"
# Fixture-sized settings: a few optimizer steps per epoch, so the masks get a large learning
# rate and penalty; the real config uses LD-Net's lambda0 = 0.05 per sentence (x batch size) and
# budget 2.
run ner_prune.log $BIN/allennlp train training_configs/tagging/ner_ldnet_prune.jsonnet \
  -s $OUT/ner_prune --include-package ldnet_allennlp -o '{
    "trainer.num_epochs": 25, "data_loader.batch_size": 8,
    "trainer.optimizer.parameter_groups": [[["layer_mask"], {"lr": 0.1}]],
    "model.regularizer": {"regexes": [["layer_mask", {"type": "layer_selection", "lambda0": 1.0, "budget": 4}]]}
  }'
grep -o "layer_pruning after epoch.*" $OUT/ner_prune/out.log | tail -1 | sed 's/^/   /' || true
echo "   mask plot: $OUT/ner_prune/layer_masks.png"

echo "== 4. allennlp ldnet-prune: physically remove the layers whose mask is 0"
$BIN/allennlp ldnet-prune $OUT/ner_prune/model.tar.gz -o $OUT/ner_pruned.tar.gz \
  --include-package ldnet_allennlp 2> $OUT/ldnet_prune.log | sed 's/^/   /'

echo "== 5. allennlp predict with the pruned archive, on a raw sentence"
echo '{"sentence": "Maria Lopez said Reuters visited Lake Geneva on Monday."}' > $OUT/input.jsonl
$BIN/allennlp predict $OUT/ner_pruned.tar.gz $OUT/input.jsonl --include-package ldnet_allennlp \
  --silent --output-file $OUT/predictions.jsonl 2> $OUT/predict.log \
  || { tail -30 $OUT/predict.log; exit 1; }
cat $OUT/predictions.jsonl
echo "   (trained for seconds on a few fixture sentences: these tags are not meant to be right, the commands are)"
