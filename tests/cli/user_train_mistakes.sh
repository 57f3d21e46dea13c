#!/usr/bin/env bash
# The mistakes a new user makes with `frugal train`, each answered with the documented exit code,
# a message naming the option, the value and what is allowed (never a stack trace), and nothing
# written: no run folder, no config.json, no events. An old run is left as it was by a refused
# rerun, and `--fresh` starts it over without the old metrics and event files.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python numpy
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 16 npy
base=(--data "$t/data.zip" --model cnn --epochs 1 --batch-size 8 --workers 1 --device cpu)

no_trace() {  # the message is frugal's, not LibTorch's or CLI11's internals
  if grep -qE "Exception raised from|frame #[0-9]|internal error|terminate called" "$t/err"; then
    bad "$1: a stack trace or internal error" "$t/err"
  else ok "$1: no stack trace"; fi
}
nothing_written() {  # nothing_written NAME FOLDER
  if [[ -e $2 ]]; then bad "$1: left $(ls -A "$2" | tr '\n' ' ')in $(basename "$2")"; else ok "$1: nothing written"; fi
}
refused() {  # refused NAME EXIT TEXT... -- ARGS...: train with ARGS into a fresh folder
  local name=$1 want=$2 texts=() run
  shift 2
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  run=$t/run-$((++n))
  expect_exit "$name: exit $want" "$want" frugal train "${base[@]}" --run "$run" "$@"
  for m in "${texts[@]}"; do expect_msg "$name: says '$m'" "$m"; done
  no_trace "$name"
  nothing_written "$name" "$run"
}
n=0

# Option values out of range: exit 2, naming the option, the value and the range.
refused "--lr -1" 2 "--lr" '"-1"' "above 0" -- --lr -1
refused "--lr abc" 2 "--lr" '"abc"' -- --lr abc
refused "--epochs 0" 2 "--epochs" '"0"' "from 1 to" -- --epochs 0
refused "--batch-size 0" 2 "--batch-size" '"0"' "from 1 to" -- --batch-size 0
refused "--batch-size 1.5" 2 "--batch-size" "whole number" -- --batch-size 1.5
refused "--accum -2" 2 "--accum" -- --accum -2
refused "--val-split 1.5" 2 "--val-split" '"1.5"' "fraction" -- --val-split 1.5
refused "--disk-budget 4Q" 2 "--disk-budget" '"4Q"' "20G" -- --disk-budget 4Q
refused "--deadline soon" 2 "--deadline" '"soon"' "HH:MM" -- --deadline soon
refused "--save-every 0steps" 2 "--save-every" -- --save-every 0steps
refused "--model resnet" 2 "--model" '"resnet"' "resnet18" -- --model resnet
refused "--channels 2" 2 "--channels" "1 or 3" -- --channels 2
refused "--amp fp8" 2 "--amp" "fp16" -- --amp fp8
refused "--device gpu" 2 "--device" "cuda:N" -- --device gpu
refused "--warmup 2" 2 "--warmup" "fraction" -- --warmup 2
refused "--workers 0" 2 "--workers" -- --workers 0

# Budgets that cannot hold: exit 4, saying what would fit; nothing was changed.
refused "--image-size 100000" 4 "image size of at most" "nothing was changed" -- --image-size 100000
refused "--deadline 1s" 4 "deadline" "nothing was changed" -- --deadline 1s
refused "--image-size 2" 2 "image size" -- --image-size 2

# One class is nothing to learn: exit 3.
"$py" - "$t/one.zip" <<'PY'
import io, sys, zipfile
import numpy as np
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for i in range(16):
        buf = io.BytesIO(); np.save(buf, np.full((28, 28), i, np.uint8)); z.writestr(f"cats/{i:03d}.npy", buf.getvalue())
PY
expect_exit "one class: exit 3" 3 frugal train "${base[@]}" --data "$t/one.zip" --run "$t/one"
expect_msg "one class: says so" "at least 2 classes"
expect_msg "one class: names the class" '"cats"'
nothing_written "one class" "$t/one"

# An old run: a refused rerun (even with --fresh) leaves it as it was.
frugal train "${base[@]}" --epochs 2 --run "$t/old" 2>"$t/old.log" || die "the first run failed" "$t/old.log"
listing() { (cd "$t/old" && ls -A | sort && md5sum metrics.jsonl config.json); }
before=$(listing)
expect_exit "--fresh --lr -1 on an old run: exit 2" 2 frugal train "${base[@]}" --run "$t/old" --fresh --lr -1
check "...leaves the old run as it was" '[ "$(listing)" == "$before" ]'
expect_exit "--fresh --deadline 1s on an old run: exit 4" 4 frugal train "${base[@]}" --run "$t/old" --fresh --deadline 1s
check "...leaves the old run as it was" '[ "$(listing)" == "$before" ]'
expect_exit "--fresh --image-size 100000 on an old run: exit 4" 4 \
  frugal train "${base[@]}" --run "$t/old" --fresh --image-size 100000
check "...leaves the old run as it was" '[ "$(listing)" == "$before" ]'

# --fresh starts over: the old run's metrics lines and event files go.
old_events=$(ls "$t"/old/events.out.tfevents.* 2>/dev/null | wc -l)
check "the old run has 2 metrics lines and an events file" '[ "$(wc -l <"$t/old/metrics.jsonl")" -eq 2 ] && [ "$old_events" -ge 1 ]'
sleep 1  # a new events file gets a new name (its time in seconds)
expect_exit "--fresh: exit 0" 0 frugal train "${base[@]}" --run "$t/old" --fresh
check "--fresh: only the new run's metrics line" '[ "$(wc -l <"$t/old/metrics.jsonl")" -eq 1 ]'
check "--fresh: only the new run's events file" '[ "$(ls "$t"/old/events.out.tfevents.* | wc -l)" -eq 1 ]'

# metrics.jsonl's train_loss is the epoch's mean loss.
"$py" - "$t/old/metrics.jsonl" <<'PY' && ok "train_loss is a finite mean loss" || bad "train_loss"
import json, math, sys
line = json.loads(open(sys.argv[1]).readline())
assert math.isfinite(line["train_loss"]) and line["train_loss"] > 0, line
PY

finish
