#!/usr/bin/env bash
# A user predicts several images and some are bad (corrupt, missing, too large): the good ones are
# still predicted, every bad one is reported by name, and the exit code at the end is 3 (bad input)
# or 2 when only paths were wrong. The advice names only options predict has (--max-pixels).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip "$t/data.zip" 8
frugal extract "$t/data.zip" -C . 2>/dev/null || die "extract failed"
frugal train --data "$t/data.zip" --run "$t/run" --epochs 1 --batch-size 8 --workers 1 >/dev/null 2>"$t/train.log" ||
  die "training failed" "$t/train.log"
printf 'not a png at all' >broken.png
snapshot() { find "$t/w" | sort; }
before=$(snapshot)

expect_exit "good, corrupt, good, missing: exit 3 at the end" 3 \
  frugal predict "$t/run" bright/000.png broken.png dark/001.png gone.png
check "both good images predicted" '[ "$(grep -c "^bright/000.png: \|^dark/001.png: " "$t/out")" -eq 2 ]'
expect_msg "the corrupt image named" "frugal predict: broken.png:"
expect_msg "the missing image named" "frugal predict: gone.png: expected a file, found no such file or folder"
expect_msg "a summary at the end" "predicted 2 images; 2 images could not be read"
check "wrote nothing" '[ "$(snapshot)" == "$before" ]'

expect_exit "--json: exit 3" 3 frugal predict --json "$t/run" bright/000.png broken.png
expect_json "--json: the good one predicted, the bad one listed" \
  'len(d["predictions"]) == 1 and d["failed"][0]["image"] == "broken.png"'

expect_exit "only a missing path: exit 2" 2 frugal predict "$t/run" bright/000.png gone.png
check "the good one still predicted" 'grep -q "^bright/000.png: " "$t/out"'

expect_exit "too many pixels: exit 3" 3 frugal predict "$t/run" bright/000.png --max-pixels 100
expect_msg "the advice names an option predict has" "raise --max-pixels"
expect_exit "--max-pixels raised: predicted" 0 frugal predict "$t/run" bright/000.png --max-pixels 1000
finish
