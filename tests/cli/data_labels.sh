#!/usr/bin/env bash
# Labels the way datasets ship them (issue 28 item 2), through train, eval and bench loader:
# a Cassava-like folder (train.csv of image_id,label with integer labels and ids with .jpg, beside
# train_images/ and test_images/, named by label_num_to_disease_map.json), a dog-breed-like zip
# (labels.csv of id,breed, ids without .jpg, images under train/ beside test/), and a
# dogs-vs-cats-like zip labelled by --label-pattern over the path. Each training says how many
# images of how many classes it used and what it skipped by reason (no label, an id without an
# image); a column the CSV lacks is exit 2 naming its columns, an id leaving the data exit 3; nothing
# is written outside the run folders.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, json, os, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(28)
def jpeg(lo, hi):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (28, 28, 3), dtype=np.uint8)).save(b, "JPEG", quality=95)
    return b.getvalue()
def put(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "wb").write(data)
# Cassava: labels 0 and 3 of five, 12 images each; one image no row names; one row without image.
rows = ["image_id,label"]
for k, (label, lo, hi) in enumerate([(0, 160, 255), (3, 0, 96)] * 12):
    name = f"{1000015157 + k}.jpg"
    put(f"cassava/train_images/{name}", jpeg(lo, hi))
    rows.append(f"{name},{label}")
put("cassava/train_images/unlisted.jpg", jpeg(0, 255))
rows.append("999999.jpg,3")
put("cassava/test_images/2216849948.jpg", jpeg(0, 255))
put("cassava/train.csv", ("\n".join(rows) + "\n").encode())
put("cassava/sample_submission.csv", b"image_id,label\n2216849948.jpg,4\n")
put("cassava/label_num_to_disease_map.json", json.dumps({
    "0": "Cassava Bacterial Blight (CBB)", "1": "Cassava Brown Streak Disease (CBSD)",
    "2": "Cassava Green Mottle (CGM)", "3": "Cassava Mosaic Disease (CMD)", "4": "Healthy"}).encode())
# dog-breed: ids without .jpg; train/ and test/ at the top are split folders.
with zipfile.ZipFile("dogs.zip", "w") as z:
    rows = ["id,breed"]
    for k, (breed, lo, hi) in enumerate([("boston_bull", 160, 255), ("dingo", 0, 96)] * 12):
        key = f"{k:04x}bec180eb18c7604dcecc8fe0dba07"
        z.writestr(f"train/{key}.jpg", jpeg(lo, hi))
        rows.append(f"{key},{breed}")
    z.writestr("train/stray.jpg", jpeg(0, 255))
    rows.append("fffmissing,dingo")
    z.writestr("labels.csv", "\n".join(rows) + "\n")
    z.writestr("test/00a3edd22dc7859c487a64777fc8d093.jpg", jpeg(0, 255))
    z.writestr("sample_submission.csv", "id,boston_bull,dingo\n00a3edd22dc7859c487a64777fc8d093,0.5,0.5\n")
    z.writestr("hostile.csv", "id,breed\n../../etc/passwd,dingo\n")
# dogs-vs-cats: train/cat.0.jpg, train/dog.0.jpg; test1/ holds unlabelled numbers.
with zipfile.ZipFile("dogs-vs-cats.zip", "w") as z:
    for i in range(12):
        z.writestr(f"train/cat.{i}.jpg", jpeg(160, 255))
        z.writestr(f"train/dog.{i}.jpg", jpeg(0, 96))
    z.writestr("test1/1.jpg", jpeg(0, 255))
PY
snapshot() { find "$t/w" -path "$t/w/runs" -prune -o -print | sort; }
before=$(snapshot)
train() {  # train NAME DATA [OPTIONS...]: one epoch of the cnn, exit 0
  local name=$1 data=$2
  shift 2
  expect_exit "train $name: exit 0" 0 frugal train --data "$data" --run "runs/$name" --model cnn --epochs 1 \
    --batch-size 8 --workers 1 --seed 1 "$@"
}
classes_are() {  # classes_are NAME RUN PYTHON_LIST: the classes config.json records
  expect_json "$1" "d['classes'] == $3" "runs/$2/config.json"
}

cassava=(--labels train.csv --images-dir train_images/ --class-names label_num_to_disease_map.json)
train cassava cassava/ "${cassava[@]}"
expect_msg "cassava: 24 images of 2 classes, skipped by reason" \
  "cassava/: 24 images in 2 classes; skipped: 1 no image (an id of train.csv) (e.g. 999999.jpg), 2 no label (not in train.csv) (e.g. test_images/2216849948.jpg), 1 not an image (e.g. sample_submission.csv)"
expect_msg "cassava: the id without an image said in one line" \
  "cassava/:train.csv: 1 of its 25 ids name no image of the data (e.g. \"999999.jpg\", looked for as train_images/999999.jpg)"
classes_are "cassava: the classes named by the map, in label order" cassava \
  "['Cassava Bacterial Blight (CBB)', 'Cassava Mosaic Disease (CMD)']"
expect_exit "eval of cassava with the same options" 0 frugal eval runs/cassava --data cassava/ "${cassava[@]}" --json
expect_json "eval: per-class accuracy under the disease names" "'Healthy' not in d['per_class'] and 'Cassava Mosaic Disease (CMD)' in d['per_class']"
expect_exit "bench loader with --labels" 0 frugal bench loader cassava/ "${cassava[@]}" --seconds 0.5 --workers 1 --json
expect_json "bench loader: images read" "d['images'] > 0"

dogs=(--labels labels.csv --images-dir train/)
train dogs dogs.zip "${dogs[@]}"
expect_msg "dogs: train/ is a split folder" "dogs.zip: its top level is split folders: training on train/"
expect_msg "dogs: 24 images of 2 classes, skipped by reason" \
  "dogs.zip: 24 images in 2 classes; skipped: 1 no image (an id of labels.csv) (e.g. fffmissing), 1 no label (not in labels.csv) (e.g. stray.jpg)"
classes_are "dogs: the breeds are the classes" dogs "['boston_bull', 'dingo']"
expect_exit "dogs with --label-columns by name" 0 frugal bench loader dogs.zip "${dogs[@]}" --label-columns id,breed \
  --seconds 0.2 --workers 1 --json
expect_exit "a column the CSV lacks: exit 2" 2 frugal train --data dogs.zip --run runs/columns --labels labels.csv \
  --label-columns image_id,breed
expect_msg "naming the columns it has" '2 columns: 0: "id", 1: "breed"'
expect_exit "an id leaving the data: exit 3" 3 frugal train --data dogs.zip --run runs/hostile --labels hostile.csv
expect_msg "naming the file and line" "dogs.zip:hostile.csv:2"

train cats dogs-vs-cats.zip --label-pattern '([a-z]+)\.[0-9]+\.jpg$'
expect_msg "dogs-vs-cats: 24 images of 2 classes" \
  "dogs-vs-cats.zip: 24 images in 2 classes; skipped: 1 no label (--label-pattern did not match) (e.g. test1/1.jpg)"
train cats-path dogs-vs-cats.zip --label-pattern '^train/([a-z]+)\.'
classes_are "a pattern over the path" cats-path "['cat', 'dog']"

expect_exit "ls lists the data as it is" 0 frugal ls dogs.zip
check "nothing written outside the run folders" '[ "$(snapshot)" == "$before" ]'
finish
