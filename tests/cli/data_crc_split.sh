#!/usr/bin/env bash
# Training reads are checked as `frugal verify` checks them (issue 14): one byte flipped inside a
# stored entry of a split set makes verify exit 3, and train count that entry as a bad sample,
# naming it: exit 3 under the default --max-bad-fraction, a "skipping" line when under a larger one.
set -euo pipefail
py=${FRUGAL_PYTHON:-python3}
"$py" -c "import numpy" 2>/dev/null || { echo "skip: needs numpy in $py"; exit 77; }
command -v frugal-torch >/dev/null && command -v frugal >/dev/null || { echo "skip: frugal / frugal-torch not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# .npy samples: no checksum of their own, so a flipped pixel still decodes and only the zip's
# CRC-32 can tell. Stored, as images are, so the loader reads them through a mapped view.
"$py" - "$t/data.zip" <<'PY'
import io, sys, zipfile
import numpy as np
rng = np.random.default_rng(0)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
        for i in range(48):
            buf = io.BytesIO()
            np.save(buf, rng.integers(lo, hi, (28, 28), dtype=np.uint8))
            z.writestr(f"{cls}/{i:03d}.npy", buf.getvalue())
PY
frugal split "$t/data.zip" --size 20K -o "$t/parts" >/dev/null 2>&1
manifest=$t/parts/data.zip.manifest.json
[[ -f $manifest ]] || { echo "no manifest"; ls "$t/parts"; exit 1; }

# Flip the last pixel of dark/017.npy where it lies in its part.
"$py" - "$t/data.zip" "$t/parts" <<'PY'
import glob, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
info = z.getinfo("dark/017.npy")
content = z.read(info)
for part in sorted(glob.glob(sys.argv[2] + "/data.zip.part*")):
    b = bytearray(open(part, "rb").read())
    at = b.find(content)
    if at >= 0:
        b[at + len(content) - 1] ^= 0x40
        open(part, "wb").write(b)
        break
else:
    sys.exit("dark/017.npy does not lie whole in one part")
PY

set +e
frugal verify "$manifest" >"$t/verify.out" 2>&1
rc=$?
set -e
[[ $rc -eq 3 ]] || { echo "verify: expected exit 3, got $rc"; cat "$t/verify.out"; exit 1; }
grep -q "dark/017.npy" "$t/verify.out" || { echo "verify does not name the entry"; cat "$t/verify.out"; exit 1; }

common=(--data "$manifest" --model cnn --epochs 1 --batch-size 16 --workers 1 --val-split 0)
set +e
frugal train "${common[@]}" --run "$t/run1" >"$t/train1.out" 2>&1
rc=$?
set -e
[[ $rc -eq 3 ]] || { echo "train: expected exit 3 for the damaged entry, got $rc"; cat "$t/train1.out"; exit 1; }
grep -q "dark/017.npy" "$t/train1.out" && grep -q "CRC-32" "$t/train1.out" ||
  { echo "train's message lacks the entry or the CRC"; cat "$t/train1.out"; exit 1; }

frugal train "${common[@]}" --run "$t/run2" --max-bad-fraction 0.05 >"$t/train2.out" 2>&1 ||
  { echo "train under --max-bad-fraction 0.05 failed"; cat "$t/train2.out"; exit 1; }
grep -q "skipping .*dark/017.npy.*CRC-32" "$t/train2.out" || { echo "no line naming the skipped entry"; cat "$t/train2.out"; exit 1; }
echo ok
