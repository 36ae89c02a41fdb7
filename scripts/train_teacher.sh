#!/usr/bin/env bash
# A teacher tagger for the pruned students: the shipped tagger's recipe with another
# seed, trained without reading any test file (test_data_path null), then shipped small
# (fp16, LMs by reference) under pretrained/teachers/. Resumable: re-run the same command.
#
#   bash scripts/train_teacher.sh ner 2      # recipe/ner_ldnet_glove_sgd, seeds 2
#   bash scripts/train_teacher.sh chunk 2    # recipe/chunk_ldnet_glove_sgd, seeds 2
#
# One thread (OMP_NUM_THREADS=1). Data from LDNET_SHARED_DATA (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ] || { [ "$1" != ner ] && [ "$1" != chunk ]; }; then
  echo "usage: bash scripts/train_teacher.sh ner|chunk SEED" >&2
  exit 2
fi
task=$1 seed=$2
data=${LDNET_SHARED_DATA:-../shared/data}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export FORWARD_LM_ARCHIVE=pretrained/lm_forward.tar.gz BACKWARD_LM_ARCHIVE=pretrained/lm_backward.tar.gz
if [ "$task" = ner ]; then
  export CONLL03_TRAIN_DATA_PATH=$data/conll2003/eng.train CONLL03_DEV_DATA_PATH=$data/conll2003/eng.testa
  export CONLL03_TEST_DATA_PATH=/never-read  # overridden to null below: no test file at training time
else
  export CONLL00_TRAIN_DATA_PATH=$data/conll2000/train.txt CONLL00_TEST_DATA_PATH=/never-read
fi
out=runs/teachers/${task}_seed$seed
mkdir -p runs/teachers pretrained/teachers
if ! .venv/bin/python -m ldnet_allennlp.training.finished "$out"; then
  resume=()
  [ -f "$out/config.json" ] && resume=(--recover)
  .venv/bin/allennlp train "training_configs/tagging/recipe/${task}_ldnet_glove_sgd.jsonnet" -s "$out" \
    --include-package ldnet_allennlp "${resume[@]}" \
    -o "{\"random_seed\": $seed, \"numpy_seed\": $seed, \"pytorch_seed\": $seed, \"test_data_path\": null}"
fi
.venv/bin/allennlp ldnet-prune "$out/model.tar.gz" -o "pretrained/teachers/${task}_seed$seed.tar.gz" \
  --fp16 --reference-lms --keep-all-layers --include-package ldnet_allennlp
# dev F1 of the shipped archive: eng.testa, or for chunking the held-out tenth of train.txt
# (the validation reader's `holdout: "only"` when evaluate reads train.txt)
if [ "$task" = ner ]; then dev=$CONLL03_DEV_DATA_PATH; else dev=$CONLL00_TRAIN_DATA_PATH; fi
.venv/bin/allennlp evaluate "pretrained/teachers/${task}_seed$seed.tar.gz" "$dev" \
  --include-package ldnet_allennlp --output-file "$out/dev_metrics_shipped.json"
.venv/bin/python scripts/record_teacher.py "$task" "$seed" "$out/dev_metrics_shipped.json"
