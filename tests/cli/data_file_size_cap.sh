#!/usr/bin/env bash
# Memory follows the bytes, not a file's size (issue 47): a 4 GiB "JPEG" (a photo followed by zeros)
# in a folder data set took 8.6 GB to train on, `predict big.jpg` 4.6 GB and then std::bad_alloc,
# `predict x.tar:big.jpg` 4.4 GB; a 2 GB .npy was read whole for its 128-byte header (2.3 GB, 11 s).
# A file over --max-file-bytes (default 256M) is skipped and counted in training and an error
# (exit 3) naming the option in predict, decided from the size its folder or tar lists before
# anything is allocated; a .npy header is read by its size. The large files are sparse: no disk.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
cd "$t"
"$py" - <<'PY'
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
    os.makedirs(f"data/{cls}", exist_ok=True)
    for i in range(8):
        Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(f"data/{cls}/{i:03d}.jpg", "JPEG")
PY
# The model predict uses, trained on the data before the large files join it.
frugal train --data data --run run --model cnn --epochs 1 --batch-size 4 --val-split 0 --workers 1 >/dev/null \
  2>"$t/train.log" || die "training on small images failed" "$t/train.log"
"$py" - <<'PY'
import tarfile
jpeg = open("data/bright/000.jpg", "rb").read()
def sparse(path, head, size):  # `head`, then a hole up to `size` bytes
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
sparse("big.jpg", jpeg, 4 << 30)
sparse("data/bright/big.jpg", jpeg, 4 << 30)
sparse("small.jpg", jpeg, 2 << 20)  # 2 MiB: under the default, over --max-file-bytes 1M
# A 2 GB (H, W) uint8 image array: its header, then a hole.
header = "{'descr': '|u1', 'fortran_order': False, 'shape': (44721, 44721), }"
header += " " * (127 - 10 - len(header)) + "\n"
sparse("data/dark/big.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode(),
       10 + len(header) + 44721 * 44721)
# A tar whose member big.jpg declares 4 GiB: header, the JPEG, a hole to the member's end, end blocks.
info = tarfile.TarInfo("big.jpg")
info.size = 4 << 30
with open("x.tar", "wb") as f:
    f.write(info.tobuf(format=tarfile.GNU_FORMAT))
    f.write(jpeg)
    f.seek(512 + info.size)
    f.write(b"\0" * 1024)
PY
# measured NAME WANT CMD...: expect_exit, with CMD's peak memory (MiB) in $mib and its seconds in $secs.
measured() {
  local name=$1 want=$2 rc
  shift 2
  "$py" - "$@" >"$t/out" 2>"$t/err" 3>"$t/usage" <<'PY'
import os, resource, subprocess, sys, time
start = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdin=subprocess.DEVNULL)
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
os.write(3, f"{rc} {kib // 1024} {time.monotonic() - start:.1f}\n".encode())
PY
  read -r rc mib secs <"$t/usage"
  echo "     ($name: exit $rc, peak $mib MiB, $secs s)"
  check "$name: exit $want" '[ "$rc" -eq "$want" ]'
  check "$name: peak memory under 1 GiB" '[ "$mib" -lt 1024 ]'
}

measured "train on a folder with a 4 GiB JPEG and a 2 GB .npy" 0 frugal train --data data --run run2 --model cnn \
  --epochs 1 --batch-size 4 --val-split 0 --workers 1
expect_msg "train: both skipped and counted by their size" "2 larger than --max-file-bytes (256 MiB)"
expect_msg "train: the example names the file and its size" "bright/big.jpg, 4.00 GiB"
check "train: in a fraction of the 11 s the .npy's whole read took" '[ "${secs%.*}" -lt 20 ]'

measured "predict big.jpg" 3 frugal predict run big.jpg
expect_msg "predict big.jpg: names the file" "big.jpg: expected a file of at most 256 MiB (--max-file-bytes)"
expect_msg "predict big.jpg: its size" "found 4.00 GiB (4294967296 bytes)"
expect_msg "predict big.jpg: the option to raise" "raise --max-file-bytes"

measured "predict x.tar:big.jpg" 3 frugal predict run x.tar:big.jpg
expect_msg "predict x.tar:big.jpg: names the member" "x.tar:big.jpg: expected a file of at most 256 MiB"

measured "predict a folder holding one" 3 frugal predict run data/bright
expect_msg "predict a folder: the large one refused" "big.jpg: expected a file of at most 256 MiB"
check "predict a folder: the others still predicted" '[ "$(grep -c "^data/bright/0" "$t/out")" -eq 8 ]'

expect_exit "predict a 2 MiB image under the default" 0 frugal predict run small.jpg
expect_exit "predict it under --max-file-bytes 1M: exit 3" 3 frugal predict run small.jpg --max-file-bytes 1M
expect_msg "predict --max-file-bytes 1M: the cap said" "expected a file of at most 1.00 MiB (--max-file-bytes)"
expect_exit "eval takes the option" 0 frugal eval run --data data --max-file-bytes 100M --workers 1
expect_exit "train refuses --max-file-bytes 0" 2 frugal train --data data --run run0 --model cnn --epochs 1 \
  --max-file-bytes 0
finish
