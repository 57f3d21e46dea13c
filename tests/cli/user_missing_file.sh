#!/usr/bin/env bash
# A user names a file that is not there: every command answers the same way, exit 2 (usage,
# CLI.md) naming the path and what was expected, with a near name when it looks like a typo;
# a split set's name with only NAME.manifest.json beside it is read through the manifest. Nothing
# is written.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip photos.zip 8
mkdir -p set && frugal split photos.zip --size 4K -o set >/dev/null 2>&1 ||
  die "split failed"

snapshot() { find "$t/w" | sort; }
# missing NAME PATH CMD...: exit 2, the message names PATH and says no such file, nothing written.
missing() {
  local name=$1 path=$2 before
  shift 2
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  expect_msg "$name: names the path, says it is missing" "$path: expected "
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
  expect_no_msg "$name: no errno text" "open failed"
  expect_no_msg "$name: no internal error" "internal error"
}
same_words() { expect_msg "$1: the shared wording" "found no such file or folder"; }

missing "ls" nosuch.zip frugal ls nosuch.zip; same_words ls
missing "verify" nosuch.zip frugal verify nosuch.zip; same_words verify
expect_no_msg "verify: not reported as a BAD item" "BAD"
expect_no_msg "verify: the name once" "nosuch.zip: nosuch.zip"
missing "extract" nosuch.zip frugal extract nosuch.zip -C x; same_words extract
missing "pack" nosuch frugal pack nosuch -o out.zip; same_words pack
missing "split" nosuch.bin frugal split nosuch.bin; same_words split
missing "join" nosuch.manifest.json frugal join nosuch.manifest.json; same_words join

# Typos: the near name in the same folder is suggested.
missing "ls typo" photo.zip frugal ls photo.zip
expect_msg "ls typo: suggests the near name" "did you mean 'photos.zip'?"
missing "ls case slip" Photos.zip frugal ls Photos.zip
expect_msg "ls case slip: suggests the near name" "did you mean 'photos.zip'?"
missing "ls missing folder" nodir/photos.zip frugal ls nodir/photos.zip
expect_msg "ls missing folder: says the folder is missing too" "there is no folder 'nodir' either"

# Only the manifest beside the name: read through it.
expect_exit "ls through the manifest beside the name" 0 frugal ls --json set/photos.zip
expect_json "ls through the manifest lists the entries" 'len(d["entries"]) == 16'
expect_exit "verify through the manifest beside the name" 0 frugal verify --json set/photos.zip
expect_json "verify through the manifest checks the parts" 'd["ok"] and d["parts_checked"] >= 2'

# The data named where its manifest belongs: the manifest beside it is named (not "damaged").
cp photos.zip set/photos.zip
before=$(snapshot)
expect_exit "join the data, not its manifest: exit 2" 2 frugal join set/photos.zip
expect_msg "join the data: names the manifest" "give its manifest: set/photos.zip.manifest.json"
expect_no_msg "join the data: not called damaged" "damaged"
check "join the data: wrote nothing" '[ "$(snapshot)" == "$before" ]'

if command -v frugal-torch >/dev/null; then
  missing "bench loader" nosuch.zip frugal bench loader nosuch.zip; same_words bench
  missing "train --data" nosuch.zip frugal train --data nosuch.zip --run run --epochs 1; same_words train
  missing "train --data typo" photo.zip frugal train --data photo.zip --run run --epochs 1
  expect_msg "train typo: suggests the near name" "did you mean 'photos.zip'?"
  frugal train --data photos.zip --run "$t/run" --epochs 1 --batch-size 8 --workers 1 >/dev/null 2>"$t/train.log" ||
    die "training the model failed" "$t/train.log"
  missing "eval --data" nosuch.zip frugal eval "$t/run" --data nosuch.zip; same_words "eval --data"
  missing "predict CKPT" nosuch frugal predict nosuch photos.zip:bright/000.png; same_words "predict CKPT"
  missing "predict IMAGE" nosuch.png frugal predict "$t/run" nosuch.png
  # The commands below keep their own (equivalent) wording for now; the code is the same.
  missing "eval CKPT" nosuch frugal eval nosuch --data photos.zip
  missing "export" nosuch frugal export nosuch --format onnx -o out.onnx
  missing "compress" nosuch frugal compress nosuch -o out.safetensors --prune 0.5
else
  echo "skip: frugal-torch not built (bench, train, eval, predict, export, compress)"
fi
missing "du" nosuch frugal du nosuch
missing "clean" nosuch frugal clean nosuch
finish
