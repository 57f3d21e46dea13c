#!/usr/bin/env bash
# A user gives the wrong kind of file where a model belongs (the data zip, a photo, a PyTorch .pt,
# a manifest), or a run folder that cannot be created: a usage error (exit 2) naming the file, what
# it is and what was expected — never a header-length number or "internal error" — and nothing is
# written.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
make_two_class_zip photos.zip 8
"$py" - <<'PY' || die "could not make the files"
import gzip, json, zipfile
from PIL import Image
Image.new("RGB", (8, 8)).save("photo.jpg")
Image.new("RGB", (8, 8)).save("photo.png")
with zipfile.ZipFile("model.pt", "w") as z:  # torch.save's container is a zip
    z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
json.dump({"format": "frugal-split"}, open("photos.zip.json", "w"))
gzip.open("weights.gz", "wb").write(b"\0" * 64)
PY

snapshot() { find "$t/w" | sort; }
# wrong NAME FILE WHAT CMD...: exit 2, names FILE, says it is WHAT and that a model was expected.
wrong() {
  local name=$1 file=$2 what=$3 before
  shift 3
  before=$(snapshot)
  expect_exit "$name: exit 2" 2 "$@"
  expect_msg "$name: names the file and what a model is" "$file: expected a model"
  expect_msg "$name: says what the file is" "found $what"
  expect_no_msg "$name: no header-length number" "header length"
  expect_no_msg "$name: no internal error" "internal error"
  check "$name: wrote nothing" '[ "$(snapshot)" == "$before" ]'
}
wrong "eval with the data as CKPT" photos.zip "a zip archive" frugal eval photos.zip --data photos.zip
wrong "predict with the data as CKPT" photos.zip "a zip archive" frugal predict photos.zip photo.jpg
# A torch.save file is read as weights from elsewhere (docs/models.md); one holding no tensors says
# what it lacks and how to save one, and writes nothing.
before=$(snapshot)
expect_exit "export of a torch.save file without tensors: exit 3" 3 frugal export model.pt --format onnx -o m.onnx
expect_msg "...names the file and what a state dict is" "model.pt: expected a state dict"
expect_msg "...says how to save one" "torch.save(model.state_dict(), 'weights.pth')"
check "...wrote nothing" '[ "$(snapshot)" == "$before" ]'
wrong "compress of a photo" photo.jpg "a JPEG image" frugal compress photo.jpg -o small.safetensors --quantize int8
wrong "eval of a PNG" photo.png "a PNG image" frugal eval photo.png --data photos.zip
wrong "eval of a JSON file" photos.zip.json "a JSON file" frugal eval photos.zip.json --data photos.zip
wrong "eval of a gzip file" weights.gz "a gzip file" frugal eval weights.gz --data photos.zip

# A run folder that cannot be created (a file on its path): a usage error naming it, not
# "internal error" (was a C++ filesystem_error, exit 1).
before=$(snapshot)
expect_exit "train into photos.zip/run: exit 2" 2 frugal train --data photos.zip --run photos.zip/run --epochs 1 --batch-size 4 --workers 1
expect_msg "train into photos.zip/run: names it and why" "photos.zip/run; create folder failed: Not a directory; a folder on the path is a file"
expect_no_msg "train into photos.zip/run: no internal error" "internal error"
expect_no_msg "train into photos.zip/run: no C++ exception text" "filesystem error"
check "train into photos.zip/run: wrote nothing" '[ "$(snapshot)" == "$before" ]'

finish
