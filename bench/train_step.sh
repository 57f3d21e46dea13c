#!/usr/bin/env bash
# Train-step throughput of frugal (C++) against eager PyTorch on the same `cnn`, batch, precision
# (fp32) and thread count; median of TRIALS alternating trials. Prints one JSON line with the ratio.
# Env: FRUGAL_BIN (default build/bin), FRUGAL_PYTHON (default .venv/bin/python), TRIALS (5),
# BATCH (128), STEPS (50: a trial of ~5 s; at 20 the ratio wandered by +-5% between runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
py=${FRUGAL_PYTHON:-$here/../.venv/bin/python}
trials=${TRIALS:-5} batch=${BATCH:-128} steps=${STEPS:-50}
[[ -x $bin/train_step_bench ]] || { echo "train_step_bench not built in $bin" >&2; exit 1; }
cpp=() ref=()
for ((i = 0; i < trials; i++)); do
  cpp+=("$("$bin/train_step_bench" cnn "$batch" 28 1 "$steps" | sed 's/.*"images_per_s": \([0-9.]*\).*/\1/')")
  ref+=("$("$py" "$here/train_step_ref.py" "$batch" "$steps" | sed 's/.*"images_per_s": \([0-9.]*\).*/\1/')")
done
"$py" - "$batch" "${cpp[*]}" "${ref[*]}" <<'PY'
import json, statistics, sys
batch, cpp, ref = int(sys.argv[1]), [float(v) for v in sys.argv[2].split()], [float(v) for v in sys.argv[3].split()]
print(json.dumps({"bench": "train_step", "model": "cnn", "batch": batch, "precision": "fp32",
                  "frugal_images_per_s": statistics.median(cpp), "pytorch_images_per_s": statistics.median(ref),
                  "ratio": statistics.median(cpp) / statistics.median(ref), "trials": len(cpp)}))
PY
