#!/usr/bin/env bash
# Validation labels of their own (issue 42 item 3): Tiny-ImageNet as it is downloaded
# (train/<wnid>/images/*.JPEG beside <wnid>_boxes.txt, val/images/*.JPEG labelled by the
# header-less, tab-separated val/val_annotations.txt, wnids.txt, words.txt) trains with
# --val-labels val/val_annotations.txt --val-images-dir val/images: the training data keeps its
# class folders, the validation folder takes its labels from its own file (before: --labels
# applied to both, and the training images had no label). config.json records the options and a
# resume keeps them; a validation label that is no training class is exit 3 naming it and the file;
# --val-labels with no validation data of its own is exit 2.
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
rng = np.random.default_rng(42)
def jpeg(lo, hi):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (16, 16, 3), dtype=np.uint8)).save(b, "JPEG", quality=95)
    return b.getvalue()
def put(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "wb").write(data if isinstance(data, bytes) else data.encode())
wnids = {"n01443537": (160, 255), "n01629819": (0, 96)}
for wnid, (lo, hi) in wnids.items():
    boxes = []
    for i in range(8):
        put(f"tiny/train/{wnid}/images/{wnid}_{i}.JPEG", jpeg(lo, hi))
        boxes.append(f"{wnid}_{i}.JPEG\t0\t0\t15\t15")
    put(f"tiny/train/{wnid}/{wnid}_boxes.txt", "\n".join(boxes) + "\n")
rows = []
for i in range(8):
    wnid = list(wnids)[i % 2]
    put(f"tiny/val/images/val_{i}.JPEG", jpeg(*wnids[wnid]))
    rows.append(f"val_{i}.JPEG\t{wnid}\t0\t10\t12\t15")
put("tiny/val/val_annotations.txt", "\n".join(rows) + "\n")
put("tiny/test/images/test_0.JPEG", jpeg(0, 255))
put("tiny/wnids.txt", "\n".join(wnids) + "\n")
put("tiny/words.txt", "n01443537\tgoldfish, Carassius auratus\nn01629819\tEuropean fire salamander\n")
put("stray_annotations.txt", "\n".join(rows[:-1] + ["val_7.JPEG\tn09999999\t0\t0\t1\t1"]) + "\n")
PY
val=(--val-labels val/val_annotations.txt --val-images-dir val/images --labels-header no)
train() {  # train RUN [OPTIONS...]
  local run=$1
  shift
  frugal train --data tiny --run "runs/$run" --model cnn --batch-size 8 --workers 1 --seed 1 "$@"
}

expect_exit "--help names the options" 0 frugal train --help
expect_msg "--val-labels" "--val-labels" "$t/out"
expect_msg "--val-label-columns" "--val-label-columns" "$t/out"
expect_msg "--val-images-dir" "--val-images-dir" "$t/out"

expect_exit "Tiny-ImageNet trains, validated on val/ by its own labels" 0 train tiny --epochs 1 "${val[@]}" \
  --val-label-columns 0,1
expect_msg "trained on train/'s class folders" "tiny: 16 images in 2 classes; skipped: 2 not an image"
expect_msg "validated on val/'s 8 images of the same 2 classes" "tiny:val/: 8 images in 2 classes; skipped: nothing"
expect_json "config.json records the options" \
  "d['val_labels'] == 'val/val_annotations.txt' and d['val_images_dir'] == 'val/images' and d['val_label_columns'] == '0,1'" \
  runs/tiny/config.json
expect_json "and the data record says whose labels they are" \
  "'labels the validation data alone' in d['data']['val_labels'] and d['data']['validation'] == 'tiny:val/'" \
  runs/tiny/config.json
expect_json "validation figures of 8 images" \
  "any(r.get('val_accuracy') is not None for r in d)" <("$py" -c "
import json,sys; print(json.dumps([json.loads(l) for l in open('runs/tiny/metrics.jsonl') if l.strip()]))")

expect_exit "the same command again resumes the run" 0 train tiny --epochs 1 "${val[@]}" --val-label-columns 0,1
expect_msg "resumed" "resuming"
expect_json "config.json keeps them" \
  "d['val_labels'] == 'val/val_annotations.txt' and d['val_images_dir'] == 'val/images'" runs/tiny/config.json

expect_exit "the header-less file under --labels-header auto: exit 2" 2 train auto --epochs 1 \
  --val-labels val/val_annotations.txt --val-images-dir val/images
expect_msg "naming --labels-header" "--labels-header"

expect_exit "a validation label that is no training class: exit 3" 3 train stray --epochs 1 \
  --val-labels stray_annotations.txt --val-images-dir val/images --labels-header no
expect_msg "naming it" '"n09999999"'
expect_msg "and the file" "stray_annotations.txt"

expect_exit "--val-labels with no validation data of its own: exit 2" 2 frugal train --data tiny/train \
  --run runs/nosplit --model cnn --epochs 1 --val-labels ../stray_annotations.txt --labels-header no
expect_msg "naming --val" "--val"
expect_exit "--val-images-dir without --val-labels: exit 2" 2 train lone --epochs 1 --val-images-dir val/images
expect_msg "naming --val-labels" "--val-labels"
finish
