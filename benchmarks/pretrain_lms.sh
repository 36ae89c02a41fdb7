#!/usr/bin/env bash
# Pre-trains the forward and backward dense LMs (issue 3) into runs/lm_forward and
# runs/lm_backward (git-ignored); each ends with model.tar.gz, which the LD-Net tagger loads.
#
#   bash benchmarks/pretrain_lms.sh            # both directions, in parallel, one thread each
#   LM_EPOCHS=6 bash benchmarks/pretrain_lms.sh
#
# Resumable: if a run directory already exists, training continues from its last checkpoint
# (`allennlp train --recover`); LM_EPOCHS may differ from the first run's (the run's saved
# config.json gets the new trainer.num_epochs, which is the only key allowed to change).
# Logs: runs/lm_forward.log, runs/lm_backward.log.
#
# Budget: an "epoch" is 250 batches of ~64 sentences (~360k tokens; see the configs).
# LM_EPOCHS (default 5, i.e. 1,250 batches of ~1.55k tokens, ~1.9M tokens, about a third of the
# 5.9M-token corpus, per direction) was chosen so that both directions, run side by side with
# one thread each on this shared 2-core CPU, finish in about an hour: alone, one direction
# trains at ~2.6k tokens/s, but with other trainings on the machine we saw ~400-650 tokens/s
# per direction (an epoch of 250 batches in 10-17 min). The configs' own default (16 epochs)
# is one full pass.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-.venv/bin/python}
ALLENNLP=${ALLENNLP:-.venv/bin/allennlp}
DATA=${LM_DATA:-runs/lm_data}
EPOCHS=${LM_EPOCHS:-5}
DIRECTIONS=${LM_DIRECTIONS:-"forward backward"}

if [ ! -f "$DATA/train.txt" ]; then
  "$PYTHON" scripts/prepare_lm_corpus.py --output "$DATA"
fi
export LM_TRAIN_DATA_PATH="$DATA/train.txt"
export LM_VALIDATION_DATA_PATH="$DATA/dev.txt"
# Two processes on two cores: one thread each (more threads only fight each other).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

pids=()
for direction in $DIRECTIONS; do
  out="runs/lm_$direction"
  # finished = an archive and metrics.json; a run stopped before its last epoch leaves the
  # archive of its best epoch so far without metrics.json: `trained` moves it aside
  if "$PYTHON" -m ldnet_allennlp.training.finished "$out"; then
    echo "$out/model.tar.gz exists; skipping $direction"
    continue
  fi
  resume=()
  if [ -d "$out" ]; then
    resume=(--recover)
    "$PYTHON" - "$out/config.json" "$EPOCHS" <<'PY'
import json, sys
path, epochs = sys.argv[1], int(sys.argv[2])
config = json.load(open(path))
config["trainer"]["num_epochs"] = epochs
json.dump(config, open(path, "w"), indent=4)
PY
  fi
  echo "$(date -u +%FT%TZ) start $direction -> $out ${resume[*]:-}" | tee -a "runs/lm_$direction.log"
  "$ALLENNLP" train "training_configs/lm/dense_lm_$direction.jsonnet" -s "$out" \
    --include-package ldnet_allennlp "${resume[@]}" \
    --overrides "{\"trainer.num_epochs\": $EPOCHS}" >>"runs/lm_$direction.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
echo "$(date -u +%FT%TZ) done (status $status)"
exit $status
