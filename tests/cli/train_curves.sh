#!/usr/bin/env bash
# Issue 44, item 3: curves that are really there. A 7-step run writes train/loss at every step
# (K = max(1, steps / 100)), with train/lr, train/images_per_s and train/loss_scale, to its
# TensorBoard events (read back by tensorboard's own reader) and the same keys to metrics.jsonl
# (the epoch record's "train_points", format version 2); a time-budget run adds
# budget/planned_steps.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL tensorboard
needs_commands frugal frugal-torch
keep_going
cd "$t"
make_two_class_zip two.zip 28  # 56 images: 7 steps of 8

expect_exit "a 7-step run" 0 frugal train --data two.zip --model cnn --epochs 1 --batch-size 8 --val-split 0 \
  --workers 1 --run run
# curves RUN MIN_POINTS [KEY...]: RUN's events and metrics.jsonl hold >= MIN_POINTS train/loss points, and
# every KEY at each of them.
cat >curves.py <<'PY'
import glob, json, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run, least, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
bad = []
files = glob.glob(f"{run}/events.out.tfevents.*")
acc = EventAccumulator(run, size_guidance={"scalars": 0})
acc.Reload()
tags = acc.Tags()["scalars"]
print("events:", files, tags)
loss_steps = [e.step for e in acc.Scalars("train/loss")] if "train/loss" in tags else []
if len(loss_steps) < least:
    bad.append(f"{len(loss_steps)} train/loss points in the events")
for k in keys:
    if k not in tags or [e.step for e in acc.Scalars(k)] != loss_steps:
        bad.append(f"events: {k} not at every point")
records = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
epochs = [r for r in records if "epoch" in r]
points = {}
for r in epochs:
    if r.get("version") != 2:
        bad.append(f"an epoch record of version {r.get('version')}")
    for k, v in r.get("train_points", {}).items():
        points.setdefault(k, []).extend(v)
if points.get("step") != loss_steps:
    bad.append(f"metrics.jsonl's steps {points.get('step')} are not the events' {loss_steps}")
for k in ["train/loss", "time"] + keys:
    v = points.get(k, [])
    if len(v) != len(loss_steps) or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
        bad.append(f"metrics.jsonl: {k}: {v}")
ev_loss = [e.value for e in acc.Scalars("train/loss")] if loss_steps else []
if any(abs(a - b) > 1e-5 * max(1, abs(b)) for a, b in zip(ev_loss, points.get("train/loss", []))):
    bad.append("the events' losses are not metrics.jsonl's")
print("points:", json.dumps({k: v[:3] for k, v in points.items()}))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
check "7 points of train/loss, lr, images/s and the loss scale, in the events and metrics.jsonl" \
  '"$py" curves.py run 7 train/lr train/images_per_s train/loss_scale >curves.log 2>&1 || { cat curves.log; false; }'
check "...a loss scale of 1 without fp16, a learning rate above 0, images/s above 0" '"$py" - <<'"'"'PY'"'"'
import json, sys
p = [json.loads(l) for l in open("run/metrics.jsonl")][-1]["train_points"]
print(p)
sys.exit(0 if set(p["train/loss_scale"]) == {1} and min(p["train/lr"]) > 0 and min(p["train/images_per_s"]) > 0
         and p["step"] == list(range(1, 8)) and all(v is None for v in p["budget/planned_steps"]) else 1)
PY'

expect_exit "a time-budget run" 0 frugal train --data two.zip --model cnn --batch-size 8 --val-split 0.25 \
  --workers 1 --time-budget 12s --run tb
check "...gives budget/planned_steps at its points once planned, and val/loss (a plan that ended the epoch)" '"$py" - <<'"'"'PY'"'"'
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator("tb", size_guidance={"scalars": 0})
acc.Reload()
planned = [e.value for e in acc.Scalars("budget/planned_steps")] if "budget/planned_steps" in acc.Tags()["scalars"] else []
loss = acc.Scalars("train/loss")
steps = max(e.step for e in loss)
pts = [v for r in map(json.loads, open("tb/metrics.jsonl")) if "epoch" in r
       for v in r.get("train_points", {}).get("budget/planned_steps", [])]
print(len(loss), "loss points of", steps, "steps; planned", planned[-3:], "metrics", [v for v in pts if v][-3:])
val = acc.Scalars("val/loss") if "val/loss" in acc.Tags()["scalars"] else []
print(len(val), "val/loss points")
sys.exit(0 if planned and all(v > 0 for v in planned) and any(pts) and len(loss) >= min(steps, 100) and val else 1)
PY'
finish
