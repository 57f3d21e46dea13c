#!/usr/bin/env bash
# Inputs that once crashed or blew up (issue 32): --label-pattern over a 60 KB entry name (std::regex
# overflowed the stack: SIGSEGV in train and eval), --workers 100000 (9.5 GB of threads, then an
# abort; only train had a cap), an image size no RAM holds in bench loader ("internal error" and a
# stack trace), and a labels.csv that inflates to one long line (read whole before the refusal).
# Every command that takes --workers refuses the same range, and a loader that cannot fit is exit 4.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python numpy PIL
needs_commands frugal frugal-torch

# A learnable two-class set whose file names carry the label, one name of 60 KB among them.
"$py" - "$t/named.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
        for i in range(12):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(buf, "PNG")
            stem = ("x" * 60000 if i == 0 else f"{i:03d}")
            z.writestr(f"{stem}_{cls}.png", buf.getvalue())
PY
pattern='.*_([a-z]+)\.png$'  # .* over 60 KB: std::regex recursed once per character
expect_exit "train with --label-pattern over a 60 KB name: done" 0 \
  frugal train --data "$t/named.zip" --run "$t/run" --model cnn --epochs 1 --batch-size 8 --workers 1 --val-split 0 \
  --label-pattern "$pattern"
expect_exit "eval with --label-pattern over a 60 KB name: done" 0 \
  frugal eval "$t/run" --data "$t/named.zip" --workers 1 --label-pattern "$pattern"
expect_exit "bench loader with --label-pattern over a 60 KB name: done" 0 \
  frugal bench loader "$t/named.zip" --seconds 0.2 --workers 1 --batch-size 4 --label-pattern "$pattern"
expect_exit "a backreference (not RE2): exit 2" 2 \
  frugal bench loader "$t/named.zip" --seconds 0.2 --label-pattern '(a)\1'
expect_msg "a backreference: RE2 syntax named" "RE2 syntax"
expect_exit "two capture groups: exit 2" 2 frugal eval "$t/run" --data "$t/named.zip" --label-pattern '(a)(b)'
expect_msg "two capture groups: said" "exactly one capture group"

# --workers: one range for every command, refused before anything starts.
for cmd in "train --data $t/named.zip --run $t/w --model cnn --epochs 1" "eval $t/run --data $t/named.zip" \
           "bench loader $t/named.zip --seconds 0.2"; do
  name=${cmd%% /*}
  expect_exit "$name --workers 100000: exit 2" 2 timeout 20 frugal $cmd --workers 100000
  expect_msg "$name --workers 100000: the range said" "--workers: expected " "$t/err"
  expect_msg "$name --workers 100000: the same range" " from 1 to 256, found" "$t/err"
done
check "train --workers 100000 created no run folder" '[ ! -e "$t/w" ]'

# A loader whose batches cannot fit: exit 4 naming what fits, at once and in little memory.
expect_exit "bench loader --image-size 100000: exit 4" 4 \
  /usr/bin/time -f %M -o "$t/rss" timeout 20 frugal bench loader "$t/named.zip" --seconds 0.2 --image-size 100000 \
  --label-pattern "$pattern"
expect_msg "bench loader --image-size 100000: what fits" "use --image-size"
check "bench loader --image-size 100000: no internal error" '! grep -q "internal error" "$t/err"'
check "bench loader --image-size 100000: under 1 GB (max RSS $(tail -1 "$t/rss") KiB)" '[ "$(tail -1 "$t/rss")" -lt 1000000 ]'
expect_exit "bench loader: a batch no RAM holds: exit 4" 4 \
  timeout 20 frugal bench loader "$t/named.zip" --seconds 0.2 --image-size 1024 --batch-size 1000000 --workers 2 \
  --label-pattern "$pattern"
expect_msg "a batch no RAM holds: what fits" "--batch-size"

# labels.csv inflating to one 64 MiB line: refused naming its line, without reading it whole.
"$py" - "$t/csv.zip" <<'PY'
import sys, zipfile
import numpy as np
rng = np.random.default_rng(1)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("labels.csv", "w") as f:
        for _ in range(64):  # 1 MiB pieces, no newline; a random letter every 32 bytes (~4 MB zipped)
            chunk = np.full(1 << 20, ord("a"), dtype=np.uint8)
            chunk[::32] = rng.integers(ord("a"), ord("z") + 1, (1 << 20) // 32)
            f.write(chunk.tobytes())
    z.writestr("a.png", b"\x89PNG\r\n\x1a\n")
PY
expect_exit "a labels.csv of one 64 MiB line: exit 3" 3 \
  /usr/bin/time -f %M -o "$t/rss" frugal bench loader "$t/csv.zip" --seconds 0.2
expect_msg "the long line is named" "labels.csv:1: expected lines of at most 80.0 KiB"
base=$( /usr/bin/time -f %M frugal bench loader "$t/missing.zip" 2>&1 >/dev/null | tail -1 )
check "reading it took about the process's own memory ($(tail -1 "$t/rss") KiB, $base KiB for a missing file)" \
  '[ "$(tail -1 "$t/rss")" -lt $((base + 40000)) ]'
finish
