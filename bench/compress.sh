#!/usr/bin/env bash
# Compression on Fashion-MNIST: trains `cnn` and `resnet18` (28x28, grayscale) briefly, then
# `frugal compress --prune P --prune-scope global --quantize int8 --data TEST`, one JSON line per
# model: size ratio (compressed file / plain float32 weights) [target <= 0.30] and the test
# accuracy before and after [target: at most 1 point lost].
# Builds nothing: expects FRUGAL_BIN (default build/bin). Work folder: $BENCH_DIR or /tmp.
# Knobs: COMPRESS_TRAIN_COUNT (training images, default 60000), COMPRESS_EPOCHS (default 2),
#        COMPRESS_PRUNE (default 0.5), COMPRESS_MODELS (default "cnn resnet18").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath -m "${FRUGAL_BIN:-$HERE/../build/bin}")
PY=${FRUGAL_PYTHON:-$HERE/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
[ -x "$BIN/frugal-torch" ] || { echo "bench/compress.sh: $BIN/frugal-torch not built" >&2; exit 1; }
[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ] ||
  { echo "bench/compress.sh: needs Fashion-MNIST in /usr/share/datasets/fashion-mnist" >&2; exit 1; }
W=$(mktemp -d "${BENCH_DIR:-/tmp}/frugal-bench-compress.XXXXXX"); trap 'rm -rf "$W"' EXIT
export PATH="$BIN:$PATH"

"$PY" "$HERE/../scripts/make-fashion-zip.py" "$W/train.zip" --split train --count "${COMPRESS_TRAIN_COUNT:-60000}" >&2
"$PY" "$HERE/../scripts/make-fashion-zip.py" "$W/test.zip" --split t10k >&2
for model in ${COMPRESS_MODELS:-cnn resnet18}; do
  frugal train --data "$W/train.zip" --run "$W/$model" --model "$model" --image-size 28 --channels 1 \
    --epochs "${COMPRESS_EPOCHS:-2}" --batch-size 128 --lr 0.002 --workers 2 >&2
  frugal compress "$W/$model" -o "$W/$model.small.safetensors" --prune "${COMPRESS_PRUNE:-0.5}" \
    --prune-scope global --quantize int8 --data "$W/test.zip" --json >"$W/$model.json"
  "$PY" - "$W/$model.json" "$model" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"bench": "compress", "model": sys.argv[2], "prune": r["prune"], "quantize": r["quantize"],
                  "size_ratio": r["output"]["bytes"] / r["input"]["float32_bytes"],
                  "float32_bytes": r["input"]["float32_bytes"], "compressed_bytes": r["output"]["bytes"],
                  "accuracy_before": r["input"]["accuracy"], "accuracy_after": r["output"]["accuracy"],
                  "accuracy_points_lost": 100 * (r["input"]["accuracy"] - r["output"]["accuracy"])}))
PY
done
