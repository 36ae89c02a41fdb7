#!/usr/bin/env bash
# The LD-Net NER tagger on your copy of CoNLL-03, in one command:
#
#   bash scripts/ner_ldnet.sh /path/to/conll2003        # the folder with eng.train/testa/testb
#
#   1. dense LMs: uses FORWARD_LM_ARCHIVE / BACKWARD_LM_ARCHIVE if set, else the shipped
#      pretrained/lm_{forward,backward}.tar.gz, else runs/lm_{forward,backward}/model.tar.gz,
#      pre-training them first if they do not exist (python -m benchmarks lm --stage pretrain on
#      ../shared/data/lm_text, resumable);
#   2. allennlp train training_configs/tagging/$NER_CONFIG.jsonnet -s runs/ner_ldnet
#      (NER_CONFIG default recipe/ner_ldnet_glove_sgd: GloVe 50d + char CNN + LD-Net features,
#      trained with LD-Net's SGD recipe, the combination chosen on eng.testa; model picked on
#      eng.testa; NER_EPOCHS, default the config's 30 with patience 5; about 6 min per epoch
#      on one core);
#   3. allennlp evaluate on eng.testb -> runs/ner_ldnet/test_metrics.json;
#   4. allennlp predict on a raw sentence.
# Every step is resumable: re-run the same command after an interruption (training continues
# with `allennlp train --recover`; finished steps are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ] || [ ! -f "$1/eng.train" ]; then
  echo "usage: bash scripts/ner_ldnet.sh CONLL03_DIR  (a folder holding eng.train, eng.testa, eng.testb)" >&2
  exit 2
fi
BIN=.venv/bin
OUT=${NER_LDNET_DIR:-runs/ner_ldnet}
CONFIG=${NER_CONFIG:-recipe/ner_ldnet_glove_sgd}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CONLL03_TRAIN_DATA_PATH=$1/eng.train
export CONLL03_DEV_DATA_PATH=$1/eng.testa
export CONLL03_TEST_DATA_PATH=$1/eng.testb

if [ -z "${FORWARD_LM_ARCHIVE:-}" ] || [ -z "${BACKWARD_LM_ARCHIVE:-}" ] \
  && [ -f pretrained/lm_forward.tar.gz ] && [ -f pretrained/lm_backward.tar.gz ]; then
  export FORWARD_LM_ARCHIVE=pretrained/lm_forward.tar.gz
  export BACKWARD_LM_ARCHIVE=pretrained/lm_backward.tar.gz
fi
if [ -z "${FORWARD_LM_ARCHIVE:-}" ] || [ -z "${BACKWARD_LM_ARCHIVE:-}" ]; then
  export FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz
  export BACKWARD_LM_ARCHIVE=runs/lm_backward/model.tar.gz
  if [ ! -f "$FORWARD_LM_ARCHIVE" ] || [ ! -f "$BACKWARD_LM_ARCHIVE" ]; then
    echo "== 1. pre-training the dense LMs (logs: runs/lm_forward.log, runs/lm_backward.log)"
    $BIN/python -m benchmarks lm --stage pretrain
  fi
fi
echo "== 1. LMs: $FORWARD_LM_ARCHIVE $BACKWARD_LM_ARCHIVE"

# finished = an archive and metrics.json; a run stopped before its last epoch (Ctrl-C, SIGTERM)
# leaves the archive of its best epoch so far without metrics.json: `trained` moves it aside
if ! $BIN/python -m ldnet_allennlp.training.finished "$OUT"; then
  resume=()
  [ -f "$OUT/config.json" ] && resume=(--recover)
  overrides='{}'
  [ -n "${NER_EPOCHS:-}" ] && overrides="{\"trainer.num_epochs\": $NER_EPOCHS}"
  echo "== 2. allennlp train $CONFIG -> $OUT ${resume[*]:-} (log: $OUT.log)"
  $BIN/allennlp train "training_configs/tagging/$CONFIG.jsonnet" -s "$OUT" \
    --include-package ldnet_allennlp -o "$overrides" "${resume[@]}" >>"$OUT.log" 2>&1 \
    || { tail -30 "$OUT.log"; echo "training failed; see $OUT.log, then re-run to resume" >&2; exit 1; }
fi

echo "== 3. allennlp evaluate on $CONLL03_TEST_DATA_PATH"
$BIN/allennlp evaluate "$OUT/model.tar.gz" "$CONLL03_TEST_DATA_PATH" \
  --output-file "$OUT/test_metrics.json" --include-package ldnet_allennlp 2>>"$OUT.log" >/dev/null
$BIN/python -c "import json,sys; m=json.load(open(sys.argv[1])); print('   test F1 %.2f' % (100 * m['f1-measure-overall']))" \
  "$OUT/test_metrics.json"

echo "== 4. allennlp predict on a raw sentence"
echo '{"sentence": "Maria Lopez said Reuters visited Lake Geneva on Monday."}' > "$OUT/input.jsonl"
$BIN/allennlp predict "$OUT/model.tar.gz" "$OUT/input.jsonl" --silent \
  --output-file "$OUT/predictions.jsonl" --include-package ldnet_allennlp 2>>"$OUT.log"
cat "$OUT/predictions.jsonl"
