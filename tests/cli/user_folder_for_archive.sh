#!/usr/bin/env bash
# A user gives a folder of images where data belongs: ls lists it, verify reads every file, train
# and eval read it in place, predict every image under it; nothing is written inside it. Where a
# file is wanted (split, join) or a folder means nothing (extract) the command says so, exits 2 and
# writes nothing.
# A zip named before it was packed, the folder beside it: the message says to give the folder.
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
# refused NAME CMD...: exit 2, no file or folder added anywhere under $t/w.
refused() {
  local name=$1 before
  shift
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
}
# read_in_place NAME CMD...: exit 0, nothing added under $t/w.
read_in_place() {
  local name=$1 before
  shift
  before=$(snapshot)
  expect_exit "$name: exit 0" 0 "$@"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
}

for p in photos/ photos; do
  read_in_place "ls $p" frugal ls "$p"
  expect_msg "ls $p: lists its files" "bright/3.png" "$t/out"
  expect_msg "ls $p: no CRC for a folder's files" "stored   -         bright/3.png" "$t/out"
  expect_msg "ls $p: counts them" "18 entries" "$t/out"  # 2 folders, 16 files
done
read_in_place "ls photos:bright/" frugal ls photos:bright/
expect_msg "ls photos:bright/: names relative to it" " 3.png" "$t/out"
read_in_place "verify photos/" frugal verify photos/
expect_msg "verify: all good" "all good" "$t/out"
expect_msg "verify: says what it could not check" "18 entries without a checksum" "$t/out"
refused "extract photos/" frugal extract photos/ -C x
expect_msg "extract: a folder is read in place" "a folder (read in place)"
refused "split photos/" frugal split photos/
expect_msg "split: a file is wanted" "photos: expected a file, found a folder"
refused "join photos/" frugal join photos/
expect_msg "join: a manifest is wanted" "expected a split manifest"

# A folder holding one archive lists it; the archive inside is DATA:NAME.
read_in_place "ls holder/" frugal ls holder/
expect_msg "ls holder/: the zip is an entry" "data.zip" "$t/out"
read_in_place "ls holder:data.zip" frugal ls holder:data.zip
expect_msg "ls holder:data.zip: the zip's entries" "dark/7.png" "$t/out"

# The zip named before it was packed, the folder beside it.
refused "ls photos.zip (not packed yet)" frugal ls photos.zip
expect_msg "ls photos.zip: the folder is beside it" "photos/ is a folder, read as it is: give photos/"

if command -v frugal-torch >/dev/null; then
  read_in_place "bench loader photos/" frugal bench loader photos/ --seconds 1 --workers 1
  expect_exit "train --data photos/" 0 frugal train --data photos/ --run "$t/run" --epochs 1 --batch-size 8 --workers 1
  check "train --data photos/: nothing written in the data" '[ -z "$(find photos -newer holder/data.zip -type f)" ]'
  read_in_place "eval --data photos/" frugal eval "$t/run" --data photos/
  read_in_place "predict photos/bright" frugal predict "$t/run" photos/bright
  expect_msg "predict: every image under the folder" "photos/bright/7.png: " "$t/out"
else
  echo "skip: frugal-torch not built (bench, train, eval, predict)"
fi
finish
