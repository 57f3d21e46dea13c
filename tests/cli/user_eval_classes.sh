#!/usr/bin/env bash
# Issue 17, item 6: data whose classes differ from the model's. eval, compress's accuracy report and
# fine-tuning match classes by name (one rule): names the model does not know are exit 3 naming
# the first differences (a "0_" prefix beside the plain name shows, with a hint); data holding a
# subset of the model's classes is evaluated over the classes present, and a note says so.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 16
frugal train --data "$t/data.zip" --run "$t/run" --model cnn --epochs 1 --batch-size 16 --lr 0.003 \
  --workers 1 2>"$t/train.log" || die "train" "$t/train.log"

# renamed ZIP OUT FROM=TO...: a copy of ZIP with class folders renamed (TO empty: left out).
renamed() {
  "$py" - "$@" <<'PY'
import sys, zipfile
src, out, pairs = sys.argv[1], sys.argv[2], dict(p.split("=", 1) for p in sys.argv[3:])
with zipfile.ZipFile(src) as a, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as b:
    for info in a.infolist():
        cls, rest = info.filename.split("/", 1)
        to = pairs.get(cls, cls)
        if to:
            b.writestr(to + "/" + rest, a.read(info))
PY
}
renamed "$t/data.zip" "$t/prefixed.zip" bright=0_bright dark=1_dark
renamed "$t/data.zip" "$t/subset.zip" dark=
renamed "$t/data.zip" "$t/unknown.zip" dark=cloudy

# The model's own classes: no note.
expect_exit "eval on the model's classes" 0 frugal eval "$t/run" --data "$t/data.zip"
expect_no_msg "...without a subset note" "of the model's"

# A number prefix on every name: exit 3, the differences named, both lists shown.
expect_exit "eval on prefixed class names is bad input" 3 frugal eval "$t/run" --data "$t/prefixed.zip"
expect_msg "...naming the classes the model does not know" '2 classes it does not: "0_bright", "1_dark"'
expect_msg "...showing the model's classes" "the model's classes: bright, dark"
expect_msg "...and the data's" "the data's: 0_bright, 1_dark"
expect_msg "...pointing at the prefix" 'differ by a number prefix ("0_bright" where the model has "bright")'

# One class the model does not know among known ones: exit 3 naming it.
expect_exit "eval on a class the model does not know is bad input" 3 frugal eval "$t/run" --data "$t/unknown.zip"
expect_msg "...naming it" '1 class it does not: "cloudy"'
expect_no_msg "...no prefix hint for a plain unknown name" "number prefix"

# A subset of the model's classes: evaluated over those, and said.
expect_exit "eval on a subset of the classes" 0 frugal eval "$t/run" --data "$t/subset.zip"
expect_msg "...noting the subset" "holds 1 of the model's 2 classes (absent: dark)"
expect_msg "...per-class accuracy of the class present" "  bright: " "$t/out"
expect_no_msg "...and not of the absent one" "  dark: " "$t/out"
expect_exit "eval --json on a subset" 0 frugal eval "$t/run" --data "$t/subset.zip" --json
expect_json "...per_class over the classes present, absent_classes named" \
  'list(d["per_class"]) == ["bright"] and d["absent_classes"] == ["dark"] and d["samples"] == 16'

# compress's accuracy report and fine-tuning follow the same rule.
expect_exit "compress --data on prefixed names is bad input" 3 \
  frugal compress "$t/run" -o "$t/c.safetensors" --quantize fp16 --data "$t/prefixed.zip"
expect_msg "...with the same message" '2 classes it does not: "0_bright", "1_dark"'
check "...and writes nothing" '[ ! -e "$t/c.safetensors" ]'
expect_exit "compress --data on a subset" 0 \
  frugal compress "$t/run" -o "$t/c.safetensors" --quantize fp16 --data "$t/subset.zip" --json
expect_json "...measured on the subset's images" 'd["images"] == 16'
expect_exit "fine-tuning on a class the model does not know is bad input" 3 \
  frugal compress "$t/run" -o "$t/f.safetensors" --prune 0.3 --finetune-epochs 1 --finetune-data "$t/unknown.zip"
expect_msg "...naming it" '1 class it does not: "cloudy"'
finish
