#!/usr/bin/env bash
# frugal train with a --disk-budget too small to keep one resumable checkpoint: exit 4 before any
# training, naming the budget that would fit; with that budget the run trains, ends exit 0, and the
# workspace (counted in allocated blocks) stays within it, best.safetensors included.
set -euo pipefail
py=${FRUGAL_PYTHON:-python3}
"$py" -c "import numpy, PIL" 2>/dev/null || { echo "skip: needs numpy + pillow in $py"; exit 77; }
command -v frugal-torch >/dev/null && command -v frugal >/dev/null || { echo "skip: frugal / frugal-torch not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

"$py" - "$t/data.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
        for i in range(16):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(buf, "PNG")
            z.writestr(f"{cls}/{i:03d}.png", buf.getvalue())
PY
mkdir -p "$t/ws"
train() {
  frugal train --data "$t/data.zip" --run "$t/ws/run" --workspace "$t/ws" --model cnn --epochs 2 --batch-size 8 \
    --val-split 0.25 --workers 1 "$@"
}

rc=0
train --disk-budget 1M 2>"$t/small.log" || rc=$?
[[ $rc -eq 4 ]] || { echo "expected exit 4 with --disk-budget 1M, got $rc"; cat "$t/small.log"; exit 1; }
grep -q "raise --disk-budget to at least" "$t/small.log" || { echo "no suggestion"; cat "$t/small.log"; exit 1; }
if grep -Eq "^training |epoch 1/" "$t/small.log"; then echo "trained before refusing"; cat "$t/small.log"; exit 1; fi
shopt -s nullglob
written=("$t"/ws/run/ckpt-* "$t"/ws/run/best.safetensor[s] "$t"/ws/run/metrics.json[l] "$t"/ws/run/events.*)
[[ ${#written[@]} -eq 0 ]] || { echo "files written before refusing: ${written[*]}"; exit 1; }

fits=$(sed -n 's/.*raise --disk-budget to at least \([0-9]*M\).*/\1/p' "$t/small.log" | head -1)
[[ -n $fits ]] || { echo "no size in the suggestion"; cat "$t/small.log"; exit 1; }
train --disk-budget "$fits" 2>"$t/fits.log" || { echo "the suggested budget $fits did not fit"; cat "$t/fits.log"; exit 1; }
[[ -f $t/ws/run/best.safetensors ]] || { echo "no best.safetensors"; cat "$t/fits.log"; exit 1; }
frugal du "$t/ws" --budget "$fits" --json >"$t/du.json"
"$py" - "$t/du.json" "$t/ws" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
assert not d["over_budget"], d
blocks = 0
for root, _, files in os.walk(sys.argv[2]):
    for f in files:
        blocks += os.lstat(os.path.join(root, f)).st_blocks * 512
assert d["usage"]["total"] == blocks, (d["usage"], blocks)  # du counts allocated blocks
assert blocks <= d["budget"], (blocks, d["budget"])
PY
echo "ok: refused 1M, trained within $fits"
