#!/usr/bin/env bash
# Multi-label training for real (issue 42): a planet-style `image_name,tags` CSV of space-separated
# tags trains a sigmoid per tag with binary cross-entropy. A synthetic two-tag task (a bar, a
# square, both, or neither in each image) reaches a validation mean AP >= 0.9; eval's figures agree
# with scikit-learn's average_precision_score on predict's probabilities; predict --csv writes the
# tags space-separated as Kaggle takes them and matches the truth; --tune-thresholds stores per-class
# thresholds with the model; the ONNX export and compress keep the head; a multi-label model on
# data of one class per image is refused (exit 2) rather than scored by the wrong rule; a stopped
# run resumes exactly, and a time budget plans it as any other.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL sklearn onnx safetensors torch
needs_commands frugal frugal-torch
keep_going
cd "$t"
"$py" - <<'PY'
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(11)
def image(bar, square):
    a = rng.integers(0, 60, (28, 28), dtype=np.uint8)
    if bar:
        r = int(rng.integers(2, 24))
        a[r:r + 3, 2:26] = 230
    if square:
        x, y = (int(v) for v in rng.integers(2, 18, 2))
        a[y:y + 8, x:x + 8] = 200
    return Image.fromarray(a)
for name, n in (("ds", 480), ("test", 120)):
    os.makedirs(f"{name}/images", exist_ok=True)
    rows = []
    for i in range(n):
        bar, square = i % 2 == 1, (i // 2) % 2 == 1
        image(bar, square).save(f"{name}/images/{name}_{i}.png")
        tags = " ".join(t for t, on in (("bar", bar), ("square", square)) if on)
        rows.append(f"{name}_{i},{tags}")
    with open(f"{name}/labels.csv", "w") as f:
        f.write("image_name,tags\n" + "\n".join(rows) + "\n")
PY
ml=(--labels labels.csv --images-dir images --label-separator ' ')

expect_exit "a multi-label run trains" 0 frugal train --data ds "${ml[@]}" --model cnn --epochs 6 --batch-size 32 \
  --lr 3e-3 --val-split 0.2 --tune-thresholds --run run --json
cp "$t/out" train.json
check "train --json gives the mean AP" \
  '"$py" -c "import json,sys; d=json.load(open(\"train.json\")); sys.exit(0 if d[\"best_val_mean_ap\"] >= 0.9 else 1)"'
check "metrics.jsonl has multi-label figures" \
  '"$py" -c "import json,sys; m=[json.loads(l) for l in open(\"run/metrics.jsonl\")][-1]; sys.exit(0 if {\"val_mean_ap\",\"val_f1\",\"thresholds\"} <= m.keys() and set(m[\"per_class\"]) == {\"bar\",\"square\"} else 1)"'

expect_exit "the epoch line gives mean AP and F1" 0 frugal train --data ds "${ml[@]}" --model cnn --epochs 1 \
  --batch-size 32 --val-split 0.2 --run run1
expect_msg "...on stderr" "val mean AP"
expect_msg "...and F1" ", F1 "
expect_exit "eval --json on the test set" 0 frugal eval run --data test "${ml[@]}" --json
cp "$t/out" eval.json
check "eval: mean AP >= 0.9" \
  '"$py" -c "import json,sys; d=json.load(open(\"eval.json\")); sys.exit(0 if d[\"multi_label\"] and d[\"mean_ap\"] >= 0.9 else 1)"'

expect_exit "report of the multi-label run (its own validation data)" 0 frugal report run -o report.html
check "...has each tag's AP and threshold, no confusion matrix" \
  'grep -q "id=\"per-tag-table\"" report.html && grep -q "<tr><td>bar</td>" report.html && ! grep -q "confusion-raw" report.html'

expect_exit "predict --json gives every probability" 0 frugal predict run test/images --top 2 --json
cp "$t/out" predict.json
# scikit-learn's average precision on predict's probabilities (frugal's AP counts scores within
# 1/64 of a logit as tied: the two agree to a few thousandths).
check "eval's AP agrees with scikit-learn's" '"$py" - <<'"'"'PY'"'"'
import json, sys
from sklearn.metrics import average_precision_score
pred = json.load(open("predict.json"))["predictions"]
truth = {l.split(",")[0]: set(l.strip().split(",")[1].split()) for l in open("test/labels.csv").readlines()[1:]}
ev = json.load(open("eval.json"))
worst = 0
for tag in ("bar", "square"):
    y = [tag in truth[p["id"]] for p in pred]
    s = [next(q["probability"] for q in p["predictions"] if q["class"] == tag) for p in pred]
    ref = average_precision_score(y, s)
    worst = max(worst, abs(ref - ev["per_class"][tag]["ap"]))
    print(tag, ref, ev["per_class"][tag]["ap"])
sys.exit(0 if worst <= 0.01 else 1)
PY'

expect_exit "predict --csv writes the tags" 0 frugal predict run test/images --csv sub.csv --csv-columns image_name,tags
check "predict --csv matches the truth (>= 95% of images, every tag right)" '"$py" - <<'"'"'PY'"'"'
import csv, sys
truth = {r["image_name"]: set(r["tags"].split()) for r in csv.DictReader(open("test/labels.csv"))}
rows = list(csv.DictReader(open("sub.csv")))
right = sum(set(r["tags"].split()) == truth[r["image_name"]] for r in rows)
print(right, "of", len(rows))
sys.exit(0 if len(rows) == len(truth) and right >= 0.95 * len(rows) else 1)
PY'
check "the best checkpoint holds per-class thresholds" '"$py" - <<'"'"'PY'"'"'
import json, struct, sys
with open("run/best.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    md = json.loads(f.read(n))["__metadata__"]
t = json.loads(md["thresholds"])
sys.exit(0 if md["multi_label"] == "true" and md["version"] == "2" and len(t) == 2 and all(0 < v < 1 for v in t) else 1)
PY'

expect_exit "export keeps the head" 0 frugal export run -o model.onnx
check "the ONNX file says multi-label, with thresholds" '"$py" - <<'"'"'PY'"'"'
import json, onnx, sys
m = {p.key: p.value for p in onnx.load("model.onnx").metadata_props}
sys.exit(0 if m.get("frugal.multi_label") == "true" and len(json.loads(m["frugal.thresholds"])) == 2 else 1)
PY'
expect_exit "compress measures mean AP" 0 frugal compress run -o small.safetensors --quantize int8 --data test \
  "${ml[@]}" --json
check "compress reports mean AP, kept within a point" \
  '"$py" -c "import json,sys; d=json.load(open(\"$t/out\")); sys.exit(0 if d[\"metric\"] == \"mean AP\" and d[\"output\"][\"accuracy\"] > d[\"input\"][\"accuracy\"] - 0.01 else 1)"'
expect_exit "the compressed model predicts tags" 0 frugal predict small.safetensors test/images/test_3.png --json
check "test_3 has both tags" '"$py" -c "import json,sys; d=json.load(open(\"$t/out\")); sys.exit(0 if sorted(d[\"predictions\"][0][\"tags\"]) == [\"bar\", \"square\"] else 1)"'

# Two processes and a two-stage pipeline train the same task: every rank's shard counted once, the
# pipeline's plans carrying each sample's row of targets.
torchrun=$(dirname "$py")/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) || torchrun=""
if [[ -n $torchrun ]]; then
  export PATH=$(dirname "$torchrun"):$PATH OMP_NUM_THREADS=1
  for how in "--nproc 2" "--nproc 2 --pipeline 2"; do
    rm -rf runp
    expect_exit "multi-label with $how" 0 frugal train --data ds "${ml[@]}" --model cnn --epochs 3 --batch-size 16 \
      --lr 3e-3 --val-split 0.2 --run runp $how
    check "...validates all 93 images, mean AP >= 0.9" \
      '"$py" -c "import json,sys; m=[json.loads(l) for l in open(\"runp/metrics.jsonl\") if \"val_mean_ap\" in l][-1]; sys.exit(0 if m[\"val_samples\"] == 93 and m[\"val_mean_ap\"] >= 0.9 else 1)"'
  done
fi

# Exact resume: a multi-label run stopped by SIGTERM once a checkpoint is saved mid-epoch, then the
# same command again, ends with the weights of the run that was not stopped (--deterministic).
det=(--data ds "${ml[@]}" --model cnn --epochs 2 --batch-size 16 --val-split 0.2 --deterministic --device cpu
     --workers 1 --seed 5 --save-every 4steps --keep-last 2)
expect_exit "a deterministic multi-label run" 0 frugal train "${det[@]}" --run ra
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'
frugal train "${det[@]}" --run rb > /dev/null 2> rb.log &
pid=$!
deadline=$((SECONDS + 120))
until (($(newest_step rb) >= 8)) || ((SECONDS > deadline)); do sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
pid=
check "...the same run stopped mid-way (exit 75)" '[ $rc -eq 75 ] && (($(newest_step rb) < $(newest_step ra)))'
expect_exit "...resumed with the same command" 0 frugal train "${det[@]}" --run rb
expect_msg "...from its checkpoint" "resuming from"
check "...ends with the uninterrupted run's weights" 'same_weights ra rb'

# A time budget plans a multi-label run as any other.
expect_exit "a multi-label run to a time budget" 0 frugal train --data ds "${ml[@]}" --model cnn --batch-size 32 \
  --val-split 0.2 --time-budget 15s --run rt
check "...evaluated by mean AP" '"$py" -c "import json,sys; m=[json.loads(l) for l in open(\"rt/metrics.jsonl\") if \"val_mean_ap\" in l]; sys.exit(0 if m else 1)"'

# Data of one class per image for a multi-label model: refused, naming the options that give tags.
mkdir -p one/bar one/square
cp test/images/test_1.png one/bar/ && cp test/images/test_2.png one/square/
expect_exit "eval: a multi-label model on single-label data is refused" 2 frugal eval run --data one
expect_msg "...naming --label-separator" "--label-separator"
finish
