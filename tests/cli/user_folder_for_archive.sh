#!/usr/bin/env bash
# A user gives a folder of images where an archive belongs (ls, verify, extract, bench, train,
# eval, split, join, predict): every command says it is a folder and how to pack it (or which
# archive inside it to give), exits 2 (usage, CLI.md) and writes nothing.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal
keep_going
mkdir -p "$t/w" && cd "$t/w"
"$py" - <<'PY'
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
    os.makedirs(f"photos/{cls}")
    for i in range(8):
        Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(f"photos/{cls}/{i}.png")
PY
mkdir holder && frugal pack photos -o holder/data.zip 2>/dev/null || die "pack failed"

snapshot() { find "$t/w" | sort; }
# refused NAME CMD...: exit 2, the folder named, no file or folder added anywhere under $t/w.
refused() {
  local name=$1 before
  shift
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
  expect_no_msg "$name: no 'a part of' riddle" "a part of"
}

for p in photos/ photos; do
  refused "ls $p" frugal ls "$p"
  expect_msg "ls $p: says it is a folder" "photos: expected an archive"
  expect_msg "ls $p: found a folder" "found a folder"
  expect_msg "ls $p: says how to pack it" "frugal pack photos/ -o photos.zip"
done
refused "verify photos/" frugal verify photos/
expect_msg "verify: how to pack it" "frugal pack photos/ -o photos.zip"
expect_no_msg "verify: not a BAD item" "BAD"
refused "extract photos/" frugal extract photos/ -C x
expect_msg "extract: how to pack it" "frugal pack photos/ -o photos.zip"
refused "split photos/" frugal split photos/
expect_msg "split: a file is wanted" "photos: expected a file, found a folder"
refused "join photos/" frugal join photos/
expect_msg "join: a manifest is wanted" "expected a split manifest"

# A folder holding one archive: name it.
refused "ls holder/" frugal ls holder/
expect_msg "ls holder/: names the archive inside" "give the archive inside it: holder/data.zip"

# The zip named before it was packed, the folder beside it.
refused "ls photos.zip (not packed yet)" frugal ls photos.zip
expect_msg "ls photos.zip: the folder is beside it" "photos/ is a folder; pack it first: frugal pack photos/ -o photos.zip"

if command -v frugal-torch >/dev/null; then
  refused "bench loader photos/" frugal bench loader photos/
  expect_msg "bench: how to pack it" "frugal pack photos/ -o photos.zip"
  refused "train --data photos/" frugal train --data photos/ --run run --epochs 1
  expect_msg "train: how to pack it" "frugal pack photos/ -o photos.zip"
  # eval and predict need a model: one epoch on the archive, in $t (outside the watched folder).
  frugal train --data holder/data.zip --run "$t/run" --epochs 1 --batch-size 8 --workers 1 >/dev/null 2>"$t/train.log" ||
    die "training the model for eval failed" "$t/train.log"
  refused "eval --data photos/" frugal eval "$t/run" --data photos/
  expect_msg "eval: how to pack it" "frugal pack photos/ -o photos.zip"
  refused "predict on a folder" frugal predict "$t/run" photos/bright
  expect_msg "predict: a file is wanted" "photos/bright: expected a file, found a folder"
else
  echo "skip: frugal-torch not built (bench, train, eval, predict)"
fi
finish
