#!/usr/bin/env bash
# Multi-label labels and header-less label files as datasets ship them (issue 42 items 2 and 3):
# a Kaggle planet-style folder (train_v2.csv of image_name,tags with space-separated tags beside
# train-jpg/) is refused without --label-separator (exit 2 naming it and --labels-are-classes) by
# every command that reads labels, and read as multi-label with it: the data record says so with
# the tag count, tags per image and images without a tag. The same tags as one 0/1 column each
# (--label-columns image_name,* or named columns; a tag no image has is said), a value that is
# not 0/1 (exit 3 naming file:line and the value). A Tiny-ImageNet layout: its header-less, tab-separated
# val/val_annotations.txt is refused under --labels-header auto (its first row, val_0.JPEG, was
# dropped as a header before) and read whole with --labels-header no --label-columns 0,1.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import json, os
import numpy as np
from PIL import Image
rng = np.random.default_rng(42)
def image(path, lo=0, hi=255):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(rng.integers(lo, hi, (28, 28, 3), dtype=np.uint8)).save(path, "JPEG", quality=90)
tags = ["agriculture", "clear", "haze", "primary", "road", "water"]
rows, ones, n_tags, none = ["image_name,tags"], ["image_name," + ",".join(tags)], 0, 0
for i in range(40):
    mine = [t for t in tags if rng.random() < 0.4]
    n_tags += len(mine)
    none += not mine
    image(f"planet/train-jpg/train_{i}.jpg")
    rows.append(f"train_{i},{' '.join(mine)}")
    ones.append(f"train_{i}," + ",".join("1" if t in mine else "0" for t in tags))
open("planet/train_v2.csv", "w").write("\n".join(rows) + "\n")
open("planet/columns.csv", "w").write("\n".join(ones) + "\n")
bad = list(ones)
bad[7] = bad[7].rsplit(",", 1)[0] + ",0.5"
open("planet/bad.csv", "w").write("\n".join(bad) + "\n")
open("planet/zero.csv", "w").write("\n".join(r + (",cloudy" if k == 0 else ",0") for k, r in enumerate(ones)) + "\n")
json.dump({"tags": len(tags), "mean": round(n_tags / 40, 3), "none": none}, open("expected.json", "w"))
# Tiny-ImageNet: train/<wnid>/images/*.JPEG, val/images/val_N.JPEG, val/val_annotations.txt
wnids = ["n01443537", "n03444034"]
lines = []
for k, w in enumerate(wnids):
    for i in range(6):
        image(f"tiny/train/{w}/images/{w}_{i}.JPEG", 160 * k, 96 + 160 * k)
for i in range(8):
    w = wnids[i % 2]
    image(f"tiny/val/images/val_{i}.JPEG")
    lines.append(f"val_{i}.JPEG\t{w}\t0\t32\t44\t62")
open("tiny/val/val_annotations.txt", "w").write("\n".join(lines) + "\n")
PY
exp() { "$py" -c "import json; print(json.load(open('expected.json'))['$1'])"; }
bench() { frugal bench loader "$@" --seconds 0.2 --image-size 16 --batch-size 4 --workers 1 --json; }

# 1. Tag lists without --label-separator: refused by every command that reads labels.
expect_exit "planet's tag lists without --label-separator: exit 2" 2 \
  frugal train --data planet --labels train_v2.csv --images-dir train-jpg/ --run runs/none --epochs 1
expect_msg "...naming --label-separator and the separator seen" "give --label-separator ' '"
expect_msg "...and --labels-are-classes" "--labels-are-classes"
check "...and no run folder written" '[ ! -e runs/none/config.json ]'
expect_exit "bench loader refuses them too" 2 bench planet --labels train_v2.csv --images-dir train-jpg/
expect_msg "...naming --label-separator" "--label-separator ' '"
expect_exit "bench loader takes --labels-are-classes" 0 bench planet --labels train_v2.csv --images-dir train-jpg/ \
  --labels-are-classes
expect_json "...each whole label a class, not multi-label" 'd["multi_label"] is False and d["classes"] > 6'

# 2. With it: multi-label, the tags named, counted and recorded.
expect_exit "bench loader --label-separator ' '" 0 bench planet --labels train_v2.csv --images-dir train-jpg/ \
  --label-separator ' '
expect_json "...reads 40 images of 6 tags, multi-label" 'd["multi_label"] is True and d["classes"] == 6 and d["dataset_size"] == 40'
expect_exit "train --label-separator ' ' --json" 0 frugal train --data planet --labels train_v2.csv \
  --images-dir train-jpg/ --label-separator ' ' --run runs/p --epochs 1 --image-size 16 --json
expect_json "...its data record says multi-label, the tags, per image and without a tag" \
  "d['data']['multi_label'] == {'tags': $(exp tags), 'mean_tags_per_image': $(exp mean), 'images_without_tags': $(exp none)} and 'multi-label' in d['data']['labels'] and d['classes'] == 6"
check "config.json records the separator and the data record" "$py -c \"
import json; c = json.load(open('runs/p/config.json'))
assert c['label_separator'] == ' ' and c['labels_header'] == 'auto', c
assert c['data']['multi_label']['tags'] == 6, c['data']
\""
expect_exit "train without --json" 0 frugal train --data planet --labels train_v2.csv --images-dir train-jpg/ \
  --label-separator ' ' --run runs/q --epochs 1 --image-size 16
expect_msg "...says multi-label in its first line" "planet: 40 images, multi-label: 6 tags; skipped: "
expect_msg "...and the tags per image" "planet: multi-label: 6 tags, "

# 3. One 0/1 column per tag.
expect_exit "--label-columns image_name,*" 0 bench planet --labels columns.csv --images-dir train-jpg/ \
  --label-columns 'image_name,*'
expect_json "...the header's 6 columns are the tags" 'd["multi_label"] is True and d["classes"] == 6 and d["dataset_size"] == 40'
expect_exit "--label-columns image_name,haze,road" 0 bench planet --labels columns.csv --images-dir train-jpg/ \
  --label-columns image_name,haze,road
expect_json "...the 2 columns named" 'd["multi_label"] is True and d["classes"] == 2'
expect_exit "train --label-columns image_name,* --json" 0 frugal train --data planet --labels columns.csv \
  --images-dir train-jpg/ --label-columns 'image_name,*' --run runs/c --epochs 1 --image-size 16 --json
expect_json "...the same record as the tag lists" \
  "d['data']['multi_label'] == {'tags': $(exp tags), 'mean_tags_per_image': $(exp mean), 'images_without_tags': $(exp none)}"
expect_exit "a column of zeros only" 0 bench planet --labels zero.csv --images-dir train-jpg/ --label-columns 'image_name,*'
expect_json "...is a tag all the same" 'd["multi_label"] is True and d["classes"] == 7'
expect_exit "...without --json" 0 frugal bench loader planet --labels zero.csv --images-dir train-jpg/ \
  --label-columns 'image_name,*' --seconds 0.2 --image-size 16 --batch-size 4 --workers 1
expect_msg "...said: no image has it" '1 tag of the labels no image read here has ("cloudy")'
expect_exit "a 0.5 in a 0/1 column: exit 3" 3 bench planet --labels bad.csv --images-dir train-jpg/ --label-columns 'image_name,*'
expect_msg "...naming file:line" "bad.csv:8"
expect_msg "...the column and the value" 'expected 0 or 1 in column "water"'
expect_msg "...the value" '"0.5"'
expect_exit "a separator and 0/1 columns at once: exit 2" 2 bench planet --labels columns.csv --images-dir train-jpg/ \
  --label-columns 'image_name,*' --label-separator ' '

# 4. Tiny-ImageNet's header-less val/val_annotations.txt.
expect_exit "--labels-header auto refuses a first row that is data" 2 bench tiny/val --labels val_annotations.txt \
  --images-dir images/
expect_msg "...naming the file's first line" "val_annotations.txt:1"
expect_msg "...what it saw" '"val_0.JPEG" is a file name'
expect_msg "...and the option" "give --labels-header no"
expect_exit "--labels-header no --label-columns 0,1" 0 bench tiny/val --labels val_annotations.txt --images-dir images/ \
  --labels-header no --label-columns 0,1
expect_json "...every row labels its image: val_0 is not lost" 'd["dataset_size"] == 8 and d["classes"] == 2 and d["skipped"] == 0'
expect_exit "--labels-header no with a column name: exit 2" 2 bench tiny/val --labels val_annotations.txt \
  --images-dir images/ --labels-header no --label-columns file,wnid
expect_msg "...saying columns go by index" "columns by 0-based index: with --labels-header no"
expect_exit "--labels-header maybe: exit 2" 2 bench tiny/val --labels val_annotations.txt --labels-header maybe
expect_exit "train on tiny/val's labels" 0 frugal train --data tiny/val --labels val_annotations.txt --images-dir images/ \
  --labels-header no --label-columns 0,1 --run runs/t --epochs 1 --image-size 16 --json
expect_json "...all 8 images, 2 classes" 'd["train_images"] + d["val_images"] == 8 and d["classes"] == 2'
check "...--labels-header recorded in config.json" "$py -c \"
import json; assert json.load(open('runs/t/config.json'))['labels_header'] == 'no'
\""
finish
