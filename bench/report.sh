#!/usr/bin/env bash
# frugal report against frugal eval on the same data, in the same run: a 100-class run (generated
# 32x32 images, a cnn trained briefly) and a validation set of VAL images (default 10,000). report
# does what eval does (the forward pass over the data, with the confusion matrix and the worst
# images) plus the run folder's record, the thumbnails, doctor's facts and the page; the target is
# report <= 2x eval. Prints one JSON line: eval and report seconds (best of TRIALS), ratio, page
# bytes. Env: FRUGAL_BIN (default build/bin), FRUGAL_PYTHON (.venv/bin/python), VAL (10000),
# TRIALS (3), WORKERS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
py=${FRUGAL_PYTHON:-$here/../.venv/bin/python}
val=${VAL:-10000}
trials=${TRIALS:-3}
workers=${WORKERS:-2}
export PATH=$bin:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 100 classes, each a colour and a stripe direction, with noise: learnable a little in one epoch.
"$py" - "$work/train.zip" 10 "$work/val.zip" "$((val / 100))" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
def write(path, per_class):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for c in range(100):
            base = np.array([(c * 37) % 256, (c * 91) % 256, (c * 53) % 256], np.int16)
            for i in range(per_class):
                img = base + rng.integers(-40, 41, (32, 32, 3))
                img[(np.arange(32) + c) % 4 == 0] += 60
                buf = io.BytesIO()
                Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, "PNG")
                z.writestr(f"class{c:03d}/{i:05d}.png", buf.getvalue())
write(sys.argv[1], int(sys.argv[2]))
write(sys.argv[3], int(sys.argv[4]))
PY
frugal train --data "$work/train.zip" --val "$work/val.zip" --run "$work/run" --model cnn --epochs 1 \
  --batch-size 64 --workers "$workers" 2>"$work/train.log" || { tail "$work/train.log"; exit 1; }
best() {  # best TRIALS CMD...: the lowest wall time of CMD, in seconds
  local n=$1 b="" s e
  shift
  for _ in $(seq "$n"); do
    s=$(date +%s.%N)
    "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    e=$(date +%s.%N)
    b=$(awk -v b="$b" -v d="$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')" 'BEGIN {print (b == "" || d < b) ? d : b}')
  done
  echo "$b"
}
t_eval=$(best "$trials" frugal eval "$work/run" --data "$work/val.zip" --workers "$workers" --json)
t_report=$(best "$trials" frugal report "$work/run" --data "$work/val.zip" --workers "$workers" -o "$work/report.html")
bytes=$(stat -c %s "$work/report.html")
awk -v e="$t_eval" -v r="$t_report" -v b="$bytes" -v n="$val" \
  'BEGIN {printf "{\"bench\": \"report\", \"classes\": 100, \"val_images\": %d, \"eval_s\": %.2f, \"report_s\": %.2f, \"ratio\": %.2f, \"page_bytes\": %d}\n", n, e, r, r / e, b}'
