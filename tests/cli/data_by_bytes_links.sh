#!/usr/bin/env bash
# Files by their bytes, links to folders, --exclude (issue 42 items 3 and 4), in train, eval and
# bench loader alike:
# - extensionless JPEG and PNG files train (before: "found none (12 not an image)", exit 3, while
#   predict read them by their bytes); a name that says text (.txt) is never opened;
# - a class folder that is a link to a folder inside the data trains under the link's name; one
#   pointing outside the data, and a link to a folder holding it (a cycle), are skipped by reason
#   (before: every linked folder was "link, device or FIFO");
# - --exclude FILE|GLOB leaves files out unread, counted as "excluded"; config.json records the
#   patterns and a resume with them keeps them.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, os
import numpy as np
from PIL import Image
rng = np.random.default_rng(7)
def image(lo, hi, fmt):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (16, 16, 3), dtype=np.uint8)).save(b, fmt)
    return b.getvalue()
def put(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "wb").write(data)
for i in range(6):
    put(f"plain/bright/{i:04d}", image(160, 255, "JPEG"))    # no extension
    put(f"plain/dark/IMG{i:04d}", image(0, 96, "PNG"))
    put(f"linked/bright/{i}.jpg", image(160, 255, "JPEG"))
    put(f"linked/pool/dark/{i}.png", image(0, 96, "PNG"))
    put(f"outside/grey/{i}.png", image(96, 160, "PNG"))
put("plain/bright/notes.txt", image(160, 255, "JPEG"))      # says text: not opened
put("plain/dark/README", b"downloaded from somewhere\n")
put("linked/bright/broken.jpg", b"\xff\xd8\xff\xe0 not really")  # excluded: never read
PY
ln -s pool/dark linked/dark            # a class folder linked inside the data: trained
ln -s ../outside/grey linked/grey      # a class folder outside the data: skipped, said
ln -s .. linked/bright/up              # a cycle: skipped
ln -s ../../outside/grey/0.png linked/bright/far.png  # a file outside: never read
run() {  # run NAME DATA [OPTIONS...]: one epoch of the cnn
  local name=$1 data=$2
  shift 2
  frugal train --data "$data" --run "runs/$name" --model cnn --batch-size 4 --workers 1 --seed 1 --val-split 0 "$@"
}

expect_exit "extensionless JPEG and PNG files train" 0 run plain plain --epochs 1
expect_msg "as 12 images of 2 classes; the text files skipped" \
  "plain: 12 images in 2 classes; skipped: 2 not an image"
expect_msg "said: taken by their bytes" "12 files whose name does not say image (e.g. bright/0000) are images by their bytes"
expect_json "classes" "d['classes'] == ['bright', 'dark']" runs/plain/config.json
expect_json "config.json's data record says so" "d['data']['taken_by_bytes'].startswith('12 files whose name')" \
  runs/plain/config.json

expect_exit "bench loader reads them too" 0 frugal bench loader plain --seconds 0.3 --workers 1 --json
expect_json "12 samples" "d['dataset_size'] == 12"

ex=(--exclude 'pool/**' --exclude broken.jpg)
expect_exit "a linked class folder inside the data trains; --exclude leaves files out" 0 run linked linked \
  --epochs 1 "${ex[@]}"
expect_msg "12 images of bright and the linked dark" "linked: 12 images in 2 classes"
expect_msg "the link outside the data skipped by its reason" "1 link to a folder outside the data (never followed) (e.g. grey)"
expect_msg "the cycle skipped by its reason" "1 link to a folder holding it (a cycle; never followed) (e.g. bright/up)"
expect_msg "the link to a file outside" "1 link to a file outside the data (never read) (e.g. bright/far.png)"
expect_msg "excluded files counted" "7 excluded"
expect_json "classes" "d['classes'] == ['bright', 'dark']" runs/linked/config.json
expect_json "config.json records --exclude" "d['exclude'] == ['pool/**', 'broken.jpg']" runs/linked/config.json
expect_no_msg "the excluded broken file was never decoded" "undecodable"

expect_exit "the same command again resumes the run" 0 run linked linked --epochs 1 "${ex[@]}"
expect_msg "resumed" "resuming"
expect_json "config.json keeps --exclude" "d['exclude'] == ['pool/**', 'broken.jpg']" runs/linked/config.json

expect_exit "eval takes --exclude" 0 frugal eval runs/linked --data linked "${ex[@]}" --json
expect_json "on bright and dark" "sorted(d['per_class']) == ['bright', 'dark']"
expect_exit "eval without them reads the broken file and pool/ (exit 3)" 3 frugal eval runs/linked --data linked --json
expect_exit "bench loader takes --exclude" 0 frugal bench loader linked "${ex[@]}" --seconds 0.3 --workers 1 --json
expect_json "12 samples" "d['dataset_size'] == 12"
expect_exit "ls lists the linked folder's files under its name" 0 frugal ls linked
expect_msg "dark/0.png" "dark/0.png" "$t/out"
# pack walks the folder as training reads it (before: the linked class folder was left out and the
# link to a file outside the data packed that file).
expect_exit "pack packs the linked class folder" 0 frugal pack linked -o linked.zip
expect_msg "and says what it left out" "3 links and special files not packed (e.g. bright/far.png)"
expect_exit "ls of the zip" 0 frugal ls linked.zip --json
expect_json "dark/ packed under its name; nothing from outside" \
  "'dark/0.png' in [e['name'] for e in d['entries']] and not any(e['name'].startswith('grey') or e['name'].endswith('far.png') for e in d['entries'])"
finish
