#!/usr/bin/env bash
# Images as they come (issue 28, item 4): a zip whose classes are WebP files only, GIF + BMP + TIFF,
# and phone JPEGs stored sideways (EXIF orientation 6), beside a class of HEIC photos and empty
# files. train uses every readable image, says what it skipped by reason in one line at the start
# and names the HEIC class; a set with one readable class fails naming the other and why (was:
# "found only class a"); eval and bench loader read the same images; --exif-orientation takes
# apply or ignore. Nothing is written outside the run folder.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python numpy PIL
needs_commands frugal frugal-torch

"$py" - "$t/mixed.zip" "$t/one.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(5)
def img(fmt, lo, hi, w=36, h=28, **kw):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (h, w, 3), dtype=np.uint8)).save(b, fmt, **kw)
    return b.getvalue()
heic = b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + bytes(200)
exif = Image.Exif(); exif[0x0112] = 6
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for i in range(10):
        z.writestr(f"set/webp/{i}.webp", img("WEBP", 180, 255, quality=90))
        z.writestr(f"set/legacy/{i}.{('gif', 'bmp', 'tif')[i % 3]}", img(("GIF", "BMP", "TIFF")[i % 3], 0, 80))
        z.writestr(f"set/phone/{i}.jpg", img("JPEG", 90, 170, exif=exif.tobytes()))
    for i in range(3):
        z.writestr(f"set/iphone/IMG_{i:04d}.HEIC", heic)
    z.writestr("set/webp/empty.webp", b"")
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as z:
    for i in range(6):
        z.writestr(f"a/{i}.webp", img("WEBP", 0, 255))
        z.writestr(f"b/{i}.heic", heic)
PY

cd "$t"
expect_exit "train on WebP, GIF, BMP, TIFF and turned JPEGs: done" 0 \
  frugal train --data "$t/mixed.zip" --run "$t/run" --model cnn --epochs 1 --batch-size 8 --workers 1 --image-size 32 \
  --val-split 0.2
expect_msg "the images used and the classes, at the start" "mixed.zip: 30 images in 3 classes; skipped:"
expect_msg "the HEIC photos counted by their format" "3 unsupported format (HEIC) (e.g. set/iphone/IMG_"
expect_msg "the empty file counted" "1 empty file (e.g. set/webp/empty.webp)"
expect_msg "the HEIC class named" 'class "iphone" has no image frugal reads: every file was skipped (3 unsupported format (HEIC)'
check "config.json records the orientation rule" 'grep -q "\"exif_orientation\": *\"apply\"" "$t/run/config.json"'
check "nothing written outside the run folder" '[ "$(ls "$t" | sort | tr "\n" " ")" = "err mixed.zip one.zip out run " ]'

expect_exit "one readable class: exit 3" 3 \
  frugal train --data "$t/one.zip" --run "$t/run1" --model cnn --epochs 1 --workers 1
expect_msg "one readable class: the other named with why" \
  'only class "a"; class "b" had no image frugal reads: 6 unsupported format (HEIC)'

expect_exit "eval reads the same formats" 0 frugal eval "$t/run" --data "$t/mixed.zip" --workers 1
expect_exit "bench loader reads them, nothing undecodable" 0 \
  frugal bench loader "$t/mixed.zip" --seconds 0.3 --workers 1 --batch-size 4 --image-size 32 --json
check "bench loader: no undecodable image" '! grep -q "undecodable" "$t/out"'

expect_exit "--exif-orientation ignore: accepted" 0 \
  frugal train --data "$t/mixed.zip" --run "$t/run2" --model cnn --epochs 1 --batch-size 8 --workers 1 --image-size 32 \
  --exif-orientation ignore
expect_exit "--exif-orientation sideways: exit 2" 2 \
  frugal train --data "$t/mixed.zip" --run "$t/run3" --model cnn --epochs 1 --exif-orientation sideways
expect_msg "--exif-orientation sideways: the choices said" "apply, ignore"
finish
