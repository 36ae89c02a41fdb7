#!/usr/bin/env bash
# The GPU check (python -m benchmarks gpu, docs/training.md "On a GPU") in one call on a CUDA
# machine that has Python and torch but neither AllenNLP nor internet. Results: $OUT/gpu.json
# and the end of the log in $OUT/gpu_check.log. The CPU figures beside them come from
# `python -m benchmarks gpu --stage cpu --baseline REF` on a CPU machine.
#
# What travels must fit the device tool's 64 MiB: the working tree without pretrained/ (the
# check's epochs run over LMs of the shipped shape trained on the fixtures, --fixture-lms), the
# bundle of the rest of the lock, and CoNLL-03's train and dev files. Prepare them here:
#
#   python scripts/bundle_dependencies.py --python-version 3.12 --lent-gpu-image --xz \
#       -o runs/bundle312                  # ~42 MB of xz; ~9 minutes
#   mkdir -p runs/gpu_data/conll2003
#   cp ../shared/data/conll2003/eng.train ../shared/data/conll2003/eng.testa runs/gpu_data/conll2003/
#   mv pretrained /tmp/pretrained.away     # back afterwards: mv /tmp/pretrained.away pretrained
#
# then run `bash scripts/gpu_check_on_device.sh` there with runs/bundle312/bundle.tar.xz and
# runs/gpu_data carried (about 8 minutes on an H100 class GPU: leave time under the 10-minute
# limit of one call by lowering EPOCHS).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu_out}
EPOCHS=${EPOCHS:-3}
BUNDLE=${BUNDLE:-runs/bundle312/bundle.tar.xz}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}  # cpu: the same run on a CPU, to try this script before a device call
mkdir -p "$OUT" /tmp/ldnet_bundle
tar -xJf "$BUNDLE" -C /tmp/ldnet_bundle
site=$(dirname "$(find /tmp/ldnet_bundle -maxdepth 3 -type d -name allennlp | head -n 1)")
export PYTHONPATH="$site:$PWD"
export LDNET_SHARED_DATA="$PWD/runs/gpu_data" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$OUT/nvidia_smi.csv" || true
set +e
"$PYTHON" -m benchmarks gpu --stage paths epoch profile --device "$DEVICE" --fixture-lms \
    --epochs "$EPOCHS" \
    --results-dir "$OUT" --work-dir /tmp/ldnet_gpu >/tmp/ldnet_gpu.log 2>&1
status=$?
set -e
grep -v " - INFO - " /tmp/ldnet_gpu.log | tail -n 300 >"$OUT/gpu_check.log"
exit $status
