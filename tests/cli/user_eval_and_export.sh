#!/usr/bin/env bash
# A user evaluates, compresses and exports a model and makes the usual mistakes (issue 17):
# eval's report reads "100%" (not "100.000000%") and says "1 image"; a test set with a few broken
# files is evaluated once the user raises --max-bad-fraction, the option its advice names;
# eval/compress option values out of range are exit 2 naming the option; a missing or mistyped
# CKPT or workspace is the same exit 2 and wording every command gives; compress with nothing to
# do names no command twice; exporting a compressed model says that ONNX gets dense float32
# weights, with both sizes. Nothing is written by a refused command.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip data.zip 16
frugal train --data data.zip --run run --model cnn --epochs 2 --batch-size 8 --lr 0.003 --workers 1 \
  >/dev/null 2>"$t/train.log" || die "training failed" "$t/train.log"
snapshot() { find "$t/w" | sort; }

# --- eval's report ------------------------------------------------------------------------------
expect_exit "eval: done" 0 frugal eval run --data data.zip --workers 1
expect_msg "eval: the overall figure as a short percent, on stdout" "accuracy " "$t/out"
check "eval: no six-decimal percents (86.380000%)" '! grep -qE "[0-9]\.[0-9]{3,}%" "$t/out"'
check "eval: per-class lines as short percents" 'grep -qE "^  bright: [0-9]+(\.[0-9]{1,2})?%$" "$t/out"'
expect_msg "eval: counts the images" "on 32 images" "$t/out"
"$py" - data.zip one.zip <<'PY'
import sys, zipfile
src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], "w")
dst.writestr("dark/000.png", src.read("dark/000.png"))
PY
expect_exit "eval on one image: done" 0 frugal eval run --data one.zip --workers 1
expect_msg "eval on one image: '1 image', not '1 images'" "on 1 image" "$t/out"
expect_no_msg "eval on one image: no '1 images'" "1 images" "$t/out"

# --- a test set with broken files ---------------------------------------------------------------
cp data.zip broken.zip
"$py" - broken.zip <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "a") as z:  # 2 broken of 34: over the default 1%
    z.writestr("bright/broken1.png", b"\x89PNG\r\n\x1a\n not really")
    z.writestr("dark/broken2.png", b"\x89PNG\r\n\x1a\n not really")
PY
expect_exit "eval on 2 broken of 34: exit 3" 3 frugal eval run --data broken.zip --workers 1
expect_msg "eval on broken files: advises its own option" "raise --max-bad-fraction"
expect_exit "eval with --max-bad-fraction raised: done" 0 frugal eval run --data broken.zip --workers 1 --max-bad-fraction 0.1
expect_msg "eval with the limit raised: the good images evaluated" "on 32 images" "$t/out"
expect_exit "eval --max-bad-fraction 1.5: exit 2" 2 frugal eval run --data data.zip --max-bad-fraction 1.5
expect_msg "eval --max-bad-fraction 1.5: names the option" "--max-bad-fraction"
expect_exit "eval --max-pixels 0: exit 2" 2 frugal eval run --data data.zip --max-pixels 0
expect_msg "eval --max-pixels 0: names the option" "--max-pixels"
# 28x28 = 784 pixels: a limit of 783 makes every image too large, 784 lets them all through.
expect_exit "eval --max-pixels 783: every image refused, exit 3" 3 frugal eval run --data data.zip --workers 1 --max-pixels 783
expect_exit "eval --max-pixels 784: done" 0 frugal eval run --data data.zip --workers 1 --max-pixels 784
expect_exit "eval --batch-size 0: exit 2" 2 frugal eval run --data data.zip --batch-size 0
expect_msg "eval --batch-size 0: names the option" "--batch-size"
expect_no_msg "eval --batch-size 0: not the loader's words" "Loader"

# --- compress mistakes --------------------------------------------------------------------------
before=$(snapshot)
expect_exit "compress with nothing to do: exit 2" 2 frugal compress run -o x.safetensors
expect_msg "compress with nothing to do: says what it needs" "expected --prune FRACTION and/or --quantize"
expect_no_msg "compress with nothing to do: the command once" "frugal compress: frugal compress"
expect_exit "compress --prune 1.5: exit 2" 2 frugal compress run -o x.safetensors --prune 1.5
expect_msg "compress --prune 1.5: names the option" "--prune"
expect_no_msg "compress --prune 1.5: no CLI11 range text" "not in range"
expect_exit "compress --finetune-lr -1: exit 2" 2 \
  frugal compress run -o x.safetensors --prune 0.5 --finetune-epochs 1 --data data.zip --finetune-lr -1
expect_msg "compress --finetune-lr -1: names the option" "--finetune-lr"
expect_no_msg "compress --finetune-lr -1: no internal error" "Invalid learning rate"
check "refused compress runs wrote nothing" '[ "$(snapshot)" == "$before" ]'

# --- a missing or mistyped CKPT / workspace -----------------------------------------------------
# missing NAME PATH CMD...: exit 2, "<PATH>: expected ..., found no such file or folder", nothing written.
missing() {
  local name=$1 path=$2 before
  shift 2
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  expect_msg "$name: names the path, says what was expected" "$path: expected "
  expect_msg "$name: the shared wording" "found no such"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
}
missing "eval CKPT" nosuch frugal eval nosuch --data data.zip
missing "export CKPT" nosuch frugal export nosuch --format onnx -o out.onnx
missing "compress CKPT" nosuch frugal compress nosuch -o out.safetensors --prune 0.5
missing "eval CKPT typo" rnu frugal eval rnu --data data.zip
expect_msg "eval CKPT typo: suggests the run folder" "did you mean 'run'?"
missing "du" nosuch frugal du nosuch
missing "clean" nosuch frugal clean nosuch
missing "clean typo" rnu frugal clean rnu
expect_msg "clean typo: suggests the near name" "did you mean 'run'?"
expect_exit "du on a file: exit 2" 2 frugal du data.zip
expect_msg "du on a file: says a folder was expected" "data.zip: expected a folder, found a file"
mkdir empty
expect_exit "eval on a folder with no checkpoint: exit 2" 2 frugal eval empty --data data.zip
expect_msg "eval on a folder with no checkpoint: says what it lacks" "best.safetensors"

# --- export of a compressed model ---------------------------------------------------------------
frugal compress run -o small.safetensors --prune 0.5 --quantize int8 >/dev/null 2>"$t/compress.log" ||
  die "compress failed" "$t/compress.log"
expect_exit "export of the compressed model: done" 0 frugal export small.safetensors --format onnx -o small.onnx
expect_msg "export of a compressed model: says so" "small.safetensors is a compressed model"
expect_msg "export of a compressed model: names how it was stored" "int8 weights, 50% pruned"
expect_msg "export of a compressed model: ONNX gets float32 weights" "dequantized to dense float32"
check "export of a compressed model: names the ONNX size" 'grep -qE "so small.onnx is [0-9.]+ ?[KMG]?i?B" "$t/err"'
expect_exit "export --json of the compressed model: done" 0 frugal export small.safetensors --format onnx -o small2.onnx --json
expect_json "export --json: the source is compressed, int8, and the ONNX weights float32" \
  'd["source"]["compressed"] and d["source"]["weights"] == "int8" and d["weights"] == "float32" and d["source"]["bytes"] < d["bytes"] and "dequantized" in d["note"]'
expect_exit "export of the run: done" 0 frugal export run --format onnx -o run.onnx
expect_no_msg "export of an uncompressed model: no compression note" "compressed model"
expect_msg "export: classes counted" "over 2 classes"
finish
