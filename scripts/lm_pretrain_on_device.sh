#!/usr/bin/env bash
# LM pre-training in one call on a CUDA machine that has Python and torch but neither AllenNLP
# nor internet: each direction of `DIRECTIONS` trains in its own process, side by side, with
# scripts/pretrain_lms_accelerated.py, for at most `SECONDS_BUDGET` seconds (a pass is cut where
# the time runs out), dev perplexity every `EVAL_EVERY` tokens. The best LM of each direction
# comes back in fp16 as $OUT/lm/lm_<direction>.th.part00, .part01, ... (parts of 15 MiB:
# `cat lm_forward.th.part* > lm_forward.th` joins them), with its log (lm_<direction>.json:
# passes, the perplexity curve, the held-out sets' perplexities) and the process's output.
#
# What travels must fit the device tool's 64 MiB: the working tree without pretrained/, the
# pack as xz (40M tokens: about 48 MB) and, to continue the shipped LMs, their weights (17 MB
# each: one direction per call fits beside the pack). Prepare them here (docs/training.md,
# "The larger corpus on an accelerator"):
#
#   python scripts/pretrain_lms_accelerated.py pack ... --output runs/lm_pack_more
#   mkdir -p runs/lm_device
#   tar -cJf runs/lm_device/pack.tar.xz --exclude train_text.txt -C runs lm_pack_more
#   mv pretrained /tmp/pretrained.away     # back afterwards: mv /tmp/pretrained.away pretrained
#
# then run `OUT=... bash scripts/lm_pretrain_on_device.sh` there with runs/lm_device carried.
# With RESUME_DIR holding lm_<direction>.th (an LM archive's weights.th), training continues
# from them; the pack must then use that LM's vocabulary (`pack --vocabulary`).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/lm_device_out}
PACK_ARCHIVE=${PACK_ARCHIVE:-runs/lm_device/pack.tar.xz}
DIRECTIONS=${DIRECTIONS:-forward backward}
PASSES=${PASSES:-10}
SECONDS_BUDGET=${SECONDS_BUDGET:-420}
EVAL_EVERY=${EVAL_EVERY:-5000000}
BATCH_SIZE=${BATCH_SIZE:-128}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT/lm" /tmp/ldnet_lm_pack
tar -xJf "$PACK_ARCHIVE" -C /tmp/ldnet_lm_pack
pack=$(dirname "$(find /tmp/ldnet_lm_pack -name pack.json | head -n 1)")
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$OUT/nvidia_smi.csv" || true
for direction in $DIRECTIONS; do
    resume=()
    if [ -n "${RESUME_DIR:-}" ]; then resume=(--resume "$RESUME_DIR/lm_$direction.th"); fi
    "$PYTHON" scripts/pretrain_lms_accelerated.py train --pack "$pack" --direction "$direction" \
        --passes "$PASSES" --max-seconds "$SECONDS_BUDGET" --stop-after-seconds "$SECONDS_BUDGET" \
        --eval-every-tokens "$EVAL_EVERY" --batch-size "$BATCH_SIZE" --fp16 "${resume[@]}" \
        --output "$OUT/lm" >"$OUT/train_$direction.log" 2>&1 &
done
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
# the training state (fp32 weights and Adam's moments, saved at the stop) does not travel
rm -f "$OUT"/lm/training_state_*.pt
for weights in "$OUT"/lm/*.th; do
    if [ -f "$weights" ]; then split -b 15M -d "$weights" "$weights.part" && rm "$weights"; fi
done
exit $status
