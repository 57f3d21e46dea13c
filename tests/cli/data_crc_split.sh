#!/usr/bin/env bash
# Training reads are checked as `frugal verify` checks them (issue 14): one byte flipped inside a
# stored entry of a split set makes verify exit 3, and train count that entry as a bad sample,
# naming it: exit 3 under the default --max-bad-fraction, a "skipping" line when under a larger one.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy
needs_commands frugal frugal-torch

# .npy samples: no checksum of their own, so a flipped pixel still decodes and only the zip's
# CRC-32 can tell. Stored, as images are, so the loader reads them through a mapped view.
make_two_class_zip "$t/data.zip" 48 npy
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

expect_exit "verify refuses the set" 3 frugal verify "$manifest"
cat "$t/out" "$t/err" >"$t/verify.out"
expect_msg "verify names the entry" "dark/017.npy" "$t/verify.out"

common=(--data "$manifest" --model cnn --epochs 1 --batch-size 16 --workers 1 --val-split 0)
expect_exit "train refuses the damaged entry" 3 frugal train "${common[@]}" --run "$t/run1"
cat "$t/out" "$t/err" >"$t/train1.out"
expect_msg "...naming the entry" "dark/017.npy" "$t/train1.out"
expect_msg "...and the CRC" "CRC-32" "$t/train1.out"

frugal train "${common[@]}" --run "$t/run2" --max-bad-fraction 0.05 >"$t/train2.out" 2>&1 ||
  die "train under --max-bad-fraction 0.05 failed" "$t/train2.out"
grep -q "skipping .*dark/017.npy.*CRC-32" "$t/train2.out" || die "no line naming the skipped entry" "$t/train2.out"
finish
