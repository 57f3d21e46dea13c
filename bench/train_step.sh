#!/usr/bin/env bash
# Train-step throughput of frugal (C++) against eager PyTorch on the same `cnn`, batch, precision
# (fp32) and thread count; median of TRIALS alternating trials. Prints one JSON line with the ratio
# against the model as the recipe runs it (default memory format), and ratio_same_format against
# eager PyTorch in channels-last too (frugal trains in channels-last on every device). On a CPU with
# bf16 instructions (AMX-BF16/AVX512-BF16) it also times both sides under bf16 autocast
# (`frugal train --amp bf16`; eager PyTorch in channels-last with torch.autocast): ratio_bf16.
# Env: FRUGAL_BIN (default build/bin), FRUGAL_PYTHON (default .venv/bin/python), TRIALS (5),
# BATCH (128), STEPS (50: a trial of ~5 s; at 20 the ratio wandered by +-5% between runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
py=${FRUGAL_PYTHON:-$here/../.venv/bin/python}
trials=${TRIALS:-5} batch=${BATCH:-128} steps=${STEPS:-50}
[[ -x $bin/train_step_bench ]] || { echo "train_step_bench not built in $bin" >&2; exit 1; }
cpp=() ref=() refcl=() cppbf=() refbf=()
bf16=0
grep -qwE 'amx_bf16|avx512_bf16' /proc/cpuinfo 2>/dev/null && bf16=1
imgs() { sed 's/.*"images_per_s": \([0-9.]*\).*/\1/'; }
for ((i = 0; i < trials; i++)); do
  cpp+=("$("$bin/train_step_bench" cnn "$batch" 28 1 "$steps" | imgs)")
  ref+=("$("$py" "$here/train_step_ref.py" "$batch" "$steps" | imgs)")
  refcl+=("$("$py" "$here/train_step_ref.py" "$batch" "$steps" channels_last | imgs)")
  if ((bf16)); then
    cppbf+=("$("$bin/train_step_bench" cnn "$batch" 28 1 "$steps" bf16 | imgs)")
    refbf+=("$("$py" "$here/train_step_ref.py" "$batch" "$steps" channels_last bf16 | imgs)")
  fi
done
"$py" - "$batch" "${cpp[*]}" "${ref[*]}" "${refcl[*]}" "${cppbf[*]:-}" "${refbf[*]:-}" <<'PY'
import json, statistics, sys
batch = int(sys.argv[1])
cpp, ref, refcl, cppbf, refbf = ([float(v) for v in a.split()] for a in sys.argv[2:7])
bf = {}
if cppbf:
    bf = {"frugal_bf16_images_per_s": statistics.median(cppbf), "pytorch_bf16_channels_last_images_per_s": statistics.median(refbf),
          "ratio_bf16": statistics.median(cppbf) / statistics.median(refbf)}
print(json.dumps({"bench": "train_step", "model": "cnn", "batch": batch, "precision": "fp32",
                  "frugal_images_per_s": statistics.median(cpp), "pytorch_images_per_s": statistics.median(ref),
                  "ratio": statistics.median(cpp) / statistics.median(ref),
                  "pytorch_channels_last_images_per_s": statistics.median(refcl),
                  "ratio_same_format": statistics.median(cpp) / statistics.median(refcl), **bf, "trials": len(cpp)}))
PY
