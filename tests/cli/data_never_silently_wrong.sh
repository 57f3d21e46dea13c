#!/usr/bin/env bash
# Never silently wrong (issue 42): what frugal decides that the user did not say is said in a line,
# in train --json's "data" and in config.json's "data"; where the data is ambiguous it refuses
# (exit 2) naming the option that decides. Five trainings that exited 0 on something other than
# what was asked:
# 1. --val-split 0 held out 5% anyway: now nothing (no validation figures; best.safetensors is the
#    newest checkpoint), said; the default 5% is said and recorded as 0.05.
# 2. A Hugging Face data/ folder of train-*, validation-*, test-* parquet files trained on all of
#    their rows, test rows included, and no line named the files: now train-* trains, validation-*
#    validates, test-* is never read for training, said naming the files.
# 3. A planet-style CSV of space-separated tags trained one class per tag combination: now refused
#    naming --label-separator (multi-label: data_multilabel_labels.sh) and --labels-are-classes;
#    class names of several words ("golden retriever") are no tags.
# 4. A larger --time-budget on a finished run said "done in 0s" under a plan line that contradicted
#    itself: now refused saying the run finished; a stopped run given a larger budget re-plans at
#    once (one consistent line) and trains to the new plan's end.
# 5. train --json hid a truncated JPEG: now counted in the outcome's "skipped" and warned on stderr.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL pyarrow
needs_commands frugal frugal-torch
keep_going
cd "$t"
export FRUGAL_CACHE_DIR=$t/cache
make_two_class_zip two.zip 16
"$py" - <<'PY'
import io, json, os
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
rng = np.random.default_rng(7)
def png(lo, hi):
    b = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
    return b.getvalue()
# 2: a Hugging Face data/ folder: 24 train rows, 8 validation, 12 test (and a copy without validation)
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": ["bright", "dark"]}}
def table(n):
    rows = [({"bytes": png(*([160, 255], [0, 96])[k]), "path": f"{k}_{i}.png"}, k) for i in range(n) for k in (0, 1)]
    t = pa.table({"image": pa.array([r[0] for r in rows], type=img_t), "label": pa.array([r[1] for r in rows])})
    return t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
for d, splits in [("hf/data", {"train": 12, "validation": 4, "test": 6}), ("hf2/data", {"train": 12, "test": 6})]:
    os.makedirs(d)
    for split, n in splits.items():
        pq.write_table(table(n), f"{d}/{split}-00000-of-00001.parquet")
# 3: Kaggle planet's layout: train_v2.csv of image_name,tags (ids without extension), train-jpg/
tags = ["clear", "haze", "primary", "agriculture", "road", "water"]
os.makedirs("planet/train-jpg")
with open("planet/train_v2.csv", "w") as f:
    f.write("image_name,tags\n")
    for i in range(24):
        t = [tags[i % 2]] + [x for j, x in enumerate(tags[2:]) if (i // 2) >> j & 1]  # 24 combinations of 6 tags
        Image.fromarray(rng.integers(0, 255, (28, 28), dtype=np.uint8)).save(f"planet/train-jpg/train_{i}.jpg")
        f.write(f"train_{i},{' '.join(t)}\n")
# 3: class names of two words are no tag lists
os.makedirs("dogs/train")
with open("dogs/breeds.csv", "w") as f:
    f.write("id,breed\n")
    for i in range(24):
        breed = ["golden retriever", "german shepherd", "great dane"][i % 3]
        Image.fromarray(rng.integers(0, 255, (28, 28), dtype=np.uint8)).save(f"dogs/train/d{i}.png")
        f.write(f"d{i},{breed}\n")
# 5: class folders of JPEGs, one of them cut in half
for k, (lo, hi) in enumerate([(160, 255), (0, 96)]):
    os.makedirs(f"jpegs/c{k}")
    for i in range(12):
        Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(f"jpegs/c{k}/{i:02d}.jpg", quality=90)
data = open("jpegs/c0/05.jpg", "rb").read()
open("jpegs/c0/05.jpg", "wb").write(data[: len(data) // 2])
PY
[[ -f jpegs/c0/05.jpg ]] || die "the test data was not made"
train() {  # train RUN [OPTIONS...]: the cnn, one epoch unless told (notes are quiet under --json)
  local run=$1
  shift
  frugal train --run "$t/runs/$run" --model cnn --batch-size 8 --workers 1 --seed 1 "$@"
}
config() { "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$t/runs/$1/config.json"; }

# 1. --val-split 0 holds out nothing.
expect_exit "1: --val-split 0 trains" 0 train vs0 --data two.zip --val-split 0 --epochs 2
expect_msg "1: said in a line" "no validation (--val-split 0): no validation figures, and best.safetensors is the newest checkpoint"
expect_msg "1: the epochs say so" "epoch 2/2: no validation"
check "1: config.json's data: val_split 0, no validation" 'config vs0 "d[\"data\"][\"val_split\"] == 0 and d[\"data\"][\"validation\"] is None"'
expect_exit "1: --json (the finished run: nothing left to train)" 0 train vs0 --data two.zip --val-split 0 --epochs 2 --json
expect_json "1: all 32 images train, none validates" 'd["train_images"] == 32 and d["val_images"] == 0'
expect_json "1: no validation figures" 'd["val_accuracy"] is None and d["best_val_accuracy"] is None'
expect_json "1: --json's data: val_split 0, no validation" 'd["data"]["val_split"] == 0 and d["data"]["validation"] is None'
check "1: best.safetensors is the newest checkpoint (no metric to rank by)" '"$py" - "$t/runs/vs0" "$t/out" <<'"'"'PY'"'"'
import json, struct, sys
raw = open(sys.argv[1] + "/best.safetensors", "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
steps = json.load(open(sys.argv[2]))["steps"]
assert steps == 8 and meta["step"] == str(steps) and "metric_value" not in meta, (steps, meta)
PY'
check "1: metrics.jsonl holds no validation figures" '! grep -q val_accuracy "$t/runs/vs0/metrics.jsonl"'
expect_exit "1: without --val-split" 0 train vsdef --data two.zip
expect_msg "1: the default 5% is said" "validating on a stable 5% of the training data"
check "1: and recorded as 0.05" 'config vsdef "d[\"data\"][\"val_split\"] == 0.05"'

# 2. Parquet files named by split.
expect_exit "2: a data/ folder of train/validation/test parquet files trains" 0 train hf --data hf/data/
expect_msg "2: one line names the files" "hf/data/: parquet files named by split: training on train-00000-of-00001.parquet; validating on validation-00000-of-00001.parquet; not read: test-00000-of-00001.parquet"
expect_msg "2: train-* trains (24 rows)" "hf/data/: 24 images in 2 classes"
check "2: config.json's data names them" 'config hf "d[\"data\"][\"train\"] == \"train-00000-of-00001.parquet\" and d[\"data\"][\"validation\"] == \"validation-00000-of-00001.parquet\" and \"val_split\" not in d[\"data\"]"'
expect_exit "2: --json" 0 train hf --data hf/data/ --json
expect_json "2: train-* trains (24 rows), validation-* validates (8)" 'd["train_images"] == 24 and d["val_images"] == 8'
expect_json "2: --json's data names them" 'd["data"]["train"] == "train-00000-of-00001.parquet" and d["data"]["validation"] == "validation-00000-of-00001.parquet"'
expect_exit "2: train and test files only" 0 train hf2 --data hf2/data/ --json
expect_json "2: the test rows are never trained on" 'd["train_images"] + d["val_images"] == 24 and d["data"]["val_split"] == 0.05'
expect_exit "2: ...said" 0 train hf2 --data hf2/data/
expect_msg "2: ...in a line" "hf2/data/: parquet files named by split: training on train-00000-of-00001.parquet; not read: test-00000-of-00001.parquet"
cp hf/data/test-00000-of-00001.parquet hf/data/extra.parquet
expect_exit "2: a parquet file of no split beside split files: exit 2" 2 train hfx --data hf/data/
expect_msg "2: ...naming the option that decides" "give the files to train on as a glob: --data"
rm hf/data/extra.parquet

# 3. Tag lists as labels.
expect_exit "3: planet's tag lists are refused" 2 train planet --data planet --labels train_v2.csv --images-dir train-jpg/
expect_msg "3: ...saying what was seen" "'clear primary agriculture road' looks like 4 tags"
expect_msg "3: ...the option that reads them as tags (multi-label)" "give --label-separator ' '"
expect_msg "3: ...and the option that overrides it" "add --labels-are-classes"
expect_exit "3: --labels-are-classes trains each whole label as a class" 0 train planet --data planet \
  --labels train_v2.csv --images-dir train-jpg/ --labels-are-classes --json
expect_json "3: ...recorded" '"labels_are_classes" in d["data"]["labels"] and d["classes"] == 24'
expect_exit "3: class names of two words are no tags" 0 train dogs --data dogs --labels breeds.csv --images-dir train/ --json
expect_json "3: 3 classes" 'd["classes"] == 3'

# 4. A finished run and a larger time budget.
expect_exit "4: a run of a 6s budget finishes" 0 train tb --data two.zip --val-split 0.25 --time-budget 6s
steps=$(newest_step "$t/runs/tb")
expect_exit "4: the finished run given 12s is refused" 2 train tb --data two.zip --val-split 0.25 --time-budget 12s
expect_msg "4: ...saying it finished" "a finished run: it ended its schedule at step $steps of its 6s budget (12s given now)"
expect_msg "4: ...that --extend goes on with it" "add --extend to go on with it"
expect_no_msg "4: ...not done" "done in"
expect_exit "4: the finished run given its own budget is done" 0 train tb --data two.zip --val-split 0.25 --time-budget 6s
expect_exit "4: a finished run of 2 epochs given 3 is refused" 2 train vs0 --data two.zip --val-split 0 --epochs 3
expect_msg "4: ...naming the change" "epochs: 2 -> 3"
expect_exit "4: a run of 8s cut by a 3s deadline" 75 train tb2 --data two.zip --val-split 0.25 --time-budget 8s --deadline 3s
expect_exit "4: the stopped run given 16s" 0 train tb2 --data two.zip --val-split 0.25 --time-budget 16s
expect_msg "4: ...re-plans at once for the new budget" "time budget: re-planned (budget changed from 8s): planned"
expect_no_msg "4: ...not the old plan under the new budget" "continuing the plan"
check "4: ...and trains to the end of the 16s plan" '"$py" - "$t/runs/tb2" "$(newest_step "$t/runs/tb2")" <<'"'"'PY'"'"'
import json, sys
plans = [json.loads(l)["time_budget"] for l in open(sys.argv[1] + "/metrics.jsonl") if "time_budget" in l]
assert plans[-1]["budget_seconds"] == 16 and int(sys.argv[2]) == plans[-1]["total_steps"], (plans[-1], sys.argv[2])
PY'

# 5. A truncated JPEG under --json.
expect_exit "5: JPEGs with one cut in half train" 0 train jpegs --data jpegs --val-split 0 --max-bad-fraction 0.5 --json
expect_json "5: the outcome counts it" 'd["skipped"].get("undecodable", 0) >= 1'
expect_msg "5: stderr warns, naming it" "frugal: warning: skipping jpegs:c0/05.jpg: expected a decodable JPEG image"
finish
