#!/usr/bin/env bash
# A user gives an option a value out of range or of the wrong form: exit 2 naming the option, the
# value and what is allowed, in words (not CLI11's "not in range 0.000000 to 1797693..."), the
# command's name once, and nothing written.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip photos.zip 4
touch model.safetensors  # never read: the options are refused first

snapshot() { find "$t/w" | sort; }
# refused NAME TEXT CMD...: exit 2 with TEXT in the message, no 300-digit range, nothing written.
refused() {
  local name=$1 text=$2 before
  shift 2
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  expect_msg "$name: says what is allowed" "$text"
  expect_no_msg "$name: no 300-digit range" "179769313"
  expect_no_msg "$name: no CLI11 range text" "not in range"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
}

refused "extract --disk-budget 4Q" "--disk-budget: expected a size such as 512K" frugal extract photos.zip -C x --disk-budget 4Q
refused "extract --max-bytes 1.5X" "--max-bytes: expected a size such as 512K" frugal extract photos.zip -C x --max-bytes 1.5X
refused "extract --limit -1" "--limit: expected an integer >= 0, found -1" frugal extract photos.zip -C x --limit -1
refused "pack --split 4Q" "--split: expected a size" frugal pack photos.zip -o out.zip --split 4Q
refused "split --size lots" "--size: expected a size" frugal split photos.zip --size lots -o parts
refused "verify --threads -2" "--threads: expected an integer from 0 to 4096, found -2" frugal verify photos.zip --threads -2

if command -v frugal-torch >/dev/null; then
  refused "predict --top 0" "--top: expected an integer >= 1, found 0" frugal predict model.safetensors a.png --top 0
  refused "predict --top x" "--top: expected an integer >= 1, found x" frugal predict model.safetensors a.png --top x
  refused "predict --max-pixels 0" "--max-pixels: expected an integer >= 1, found 0" frugal predict model.safetensors a.png --max-pixels 0
  refused "bench --batch-size 0" "--batch-size: expected an integer >= 1, found 0" frugal bench loader photos.zip --batch-size 0
  refused "bench --workers -1" "--workers: expected an integer from 1 to 256, found -1" frugal bench loader photos.zip --workers -1
  refused "bench --seconds 0" "--seconds: expected a number > 0, found 0" frugal bench loader photos.zip --seconds 0
  refused "bench --channels 2" "--channels: expected one of 1, 3, found 2" frugal bench loader photos.zip --channels 2
  refused "bench --decode fast" "--decode: expected one of cpu, gpu, auto, found fast" frugal bench loader photos.zip --decode fast
  # CLI11's own range validators (other commands' options) are said the same way.
  refused "compress --prune 2" "--prune: expected a number from 0 to 0.999, found 2" frugal compress model.safetensors -o out.safetensors --prune 2
  refused "compress without --prune or --quantize" "expected --prune FRACTION and/or --quantize" frugal compress model.safetensors -o out.safetensors
  expect_no_msg "compress: the command named once" "frugal compress: frugal compress"
else
  echo "skip: frugal-torch not built (predict, bench, compress)"
fi
finish
