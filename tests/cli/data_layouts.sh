#!/usr/bin/env bash
# Data as it comes, read in place by train, eval, bench loader and ls (issue 28 item 1): the same
# 2 x 12 images as a folder, a tar, a zip whose top level is train/ and val/ (DATA:train/ and
# --data-root train/; given as it is, trained on train/ and validated on val/, never as classes),
# a zip stored inside a zip, a WebDataset shard set (labels from .cls, named by --class-names, or
# .txt; one shard given as a tar too), and a
# .tar.gz (refused naming --cache-decompressed; with it, decompressed once into the cache folder,
# reused by the next command, and refused within a --disk-budget too small for it, exit 4). Each
# training says how many images of how many classes it used and what it skipped, and nothing is
# written outside the run folder and the cache folder.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, os, tarfile, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(4)
files = {}
for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
    for i in range(12):
        b = io.BytesIO()
        Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
        files[f"{cls}/{i}.png"] = b.getvalue()
os.makedirs("folder")
for n, d in files.items():
    os.makedirs(os.path.dirname(f"folder/{n}"), exist_ok=True)
    open(f"folder/{n}", "wb").write(d)
def add(t, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
with tarfile.open("data.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for n, d in files.items(): add(t, n, d)
with tarfile.open("data.tar.gz", "w:gz") as t:
    for n, d in files.items(): add(t, n, d)
with zipfile.ZipFile("splits.zip", "w") as z:
    for n, d in files.items():
        z.writestr("train/" + n, d)
        if n.endswith(("0.png", "1.png")): z.writestr("val/" + n, d)
    z.writestr("test/unlabelled/x.png", files["dark/0.png"])
inner = io.BytesIO()
with zipfile.ZipFile(inner, "w") as z:
    for n, d in files.items(): z.writestr(n, d)
with zipfile.ZipFile("outer.zip", "w", zipfile.ZIP_STORED) as z:
    z.writestr("train.zip", inner.getvalue())
for s in range(2):
    with tarfile.open(f"shard-{s:06d}.tar", "w") as t:
        for i in range(6):
            for cls, k in [("bright", 0), ("dark", 1)]:
                key = f"s{s}_{cls}_{i}"
                add(t, key + ".png", files[f"{cls}/{s * 6 + i}.png"])
                add(t, key + ".cls", str(k).encode())
# The same samples labelled by text (.txt), and a class-names file for the .cls numbers.
with tarfile.open("text-000000.tar", "w") as t:
    for s in range(2):
        for i in range(6):
            for cls in ("bright", "dark"):
                key = f"s{s}_{cls}_{i}"
                add(t, key + ".png", files[f"{cls}/{s * 6 + i}.png"])
                add(t, key + ".txt", cls.encode())
open("names.txt", "w").write("bright\ndark\n")
PY
snapshot() { find "$t/w" -path "$t/w/runs" -prune -o -print | sort; }
before=$(snapshot)
train() {  # train NAME DATA [OPTIONS...]: one epoch of the cnn, exit 0, and what it said it used
  local name=$1 data=$2
  shift 2
  expect_exit "train $name: exit 0" 0 frugal train --data "$data" --run "runs/$name" --model cnn --epochs 1 \
    --batch-size 8 --workers 1 --seed 1 "$@"
}

train folder folder/
expect_msg "folder: 24 images of 2 classes" "folder/: 24 images in 2 classes"
train tar data.tar
expect_msg "tar: 24 images of 2 classes" "data.tar: 24 images in 2 classes"
expect_exit "eval of the tar run on the folder" 0 frugal eval runs/tar --data folder/ --json
check "eval: an accuracy" "grep -q '\"accuracy\"' '$t/out'"
train sub splits.zip:train/ --val splits.zip:val/
expect_msg "DATA:train/: 24 images of 2 classes" "splits.zip:train/: 24 images in 2 classes"
expect_msg "DATA:val/ validates" "splits.zip:val/: 8 images in 2 classes"
train splits splits.zip
expect_msg "train/ val/ test/: split folders, never classes" \
  "splits.zip: its top level is split folders: training on train/, validating on val/"
expect_msg "train/ val/ test/: 24 images of 2 classes" "splits.zip: 24 images in 2 classes"
expect_msg "train/ val/ test/: the validation folder" "splits.zip:val/: 8 images in 2 classes"
expect_exit "eval on data with split folders" 0 frugal eval runs/splits --data splits.zip
expect_msg "eval: evaluates on the validation folder" "its top level is split folders: evaluating on val/"
train root splits.zip --data-root train/
expect_msg "--data-root train/: 24 images of 2 classes" "splits.zip: 24 images in 2 classes"
expect_exit "ls --data-root train/" 0 frugal ls splits.zip --data-root train/ --json
check "ls --data-root: names relative to it" "grep -q '\"bright/0.png\"' '$t/out' && ! grep -q 'val/' '$t/out'"
train nested outer.zip:train.zip
expect_msg "zip in a zip: 24 images of 2 classes" "outer.zip:train.zip: 24 images in 2 classes"
classes() { "$py" -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["classes"]))' "runs/$1/config.json"; }
train shards 'shard-{000000..000001}.tar'
expect_msg "shards: 24 samples of 2 classes (.cls)" "24 images in 2 classes; skipped: nothing"
check "shards: the classes are the .cls numbers, not the shard names" '[ "$(classes shards)" == "0,1" ]'
train shards_named 'shard-{000000..000001}.tar' --class-names names.txt
check "shards with --class-names: bright, dark" '[ "$(classes shards_named)" == "bright,dark" ]'
train one_shard shard-000000.tar
check "one shard given as a tar: its .cls labels" '[ "$(classes one_shard)" == "0,1" ]'
train text_shards 'text-{000000..000000}.tar'
check "labels from .txt members" '[ "$(classes text_shards)" == "bright,dark" ]'
expect_msg "...24 images, nothing skipped" "24 images in 2 classes; skipped: nothing"

expect_exit "a .tar.gz without the option" 3 frugal ls data.tar.gz
expect_msg "names the option" "--cache-decompressed"
expect_exit "bench loader --cache-decompressed" 0 frugal bench loader data.tar.gz --cache-decompressed --seconds 1 --json
check "bench loader read images" "grep -q '\"images_per_s\"' '$t/out'"
made=$(find "$t/cache" -name '*.tar' | head -1)
check "decompressed once into the cache folder" "[ -n '$made' ] && [ -s '$made' ]"
stamp=$(stat -c %Y.%i "$made" 2>/dev/null)
train targz data.tar.gz --cache-decompressed
expect_msg "tar.gz: 24 images of 2 classes" "data.tar.gz: 24 images in 2 classes"
check "the next command reused it" "[ \"\$(stat -c %Y.%i '$made')\" == '$stamp' ]"
rm -rf "$t/cache"
expect_exit "a disk budget too small for the tar: exit 4" 4 frugal train --data data.tar.gz --cache-decompressed \
  --disk-budget 20K --run runs/small --model cnn --epochs 1
expect_msg "the decompression stopped at the budget, naming it" "left of --disk-budget"
check "nothing kept of it" "[ -z \"\$(find '$t/cache' -name '*.tar' 2>/dev/null)\" ]"
check "nothing written outside the runs and the cache" '[ "$(snapshot)" == "$before" ]'
finish
