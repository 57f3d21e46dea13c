#!/usr/bin/env bash
# Exact resume with the augmentations on: a --deterministic CPU run with --augment trivial,
# --random-erasing 0.25, --mixup 0.2, --cutmix 1.0, --ema 0.99 and --progressive 20 (issue 45: the
# first epoch on 20 px images, the second on 28), stopped by SIGTERM mid-epoch (exit 75), resumed, SIGKILLed once a checkpoint
# in the second epoch is saved and resumed to its end (mid-epoch again), ends with weights and trainer state bitwise equal to
# an uninterrupted run (each sample's ops are drawn from its own seed, so a resumed epoch augments
# its samples as the uninterrupted one did; each batch's mix is drawn from (seed, step, rank, batch);
# the checkpoints hold the weights' average and the trained weights, both compared).
# config.json records the options; a resume with other
# ones is refused; the augmented weights differ from those of the default recipe (the options
# reach the loader); and --decode gpu with them is refused before anything runs.
# Data: a zip of generated 28x28 PNGs (Python, PIL).
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal-torch
needs_python PIL safetensors torch
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'
make_shapes_zip "$t/shapes.zip" 30
base=(--data "$t/shapes.zip" --model cnn --epochs 2 --batch-size 2 --deterministic
      --device cpu --workers 1 --seed 11 --save-every 4steps --keep-last 2)
args=("${base[@]}" --augment trivial --random-erasing 0.25 --mixup 0.2 --cutmix 1.0 --ema 0.99 --progressive 20)

fail() { die "$*" "$t"/*.log >&2; }

frugal train "${args[@]}" --run "$t/ref" > /dev/null 2> "$t/ref.log" || fail "uninterrupted run"
total=$(sed -n 's/.*; \([0-9]*\) steps of .*/\1/p' "$t/ref.log" | head -1)
per_epoch=$((total / 2))
[[ $total -gt 60 ]] || fail "expected a run of more than 60 steps, found '$total'"
grep -q "epoch 1: training images of 20 px" "$t/ref.log" && grep -q "epoch 2: training images of 28 px" "$t/ref.log" ||
  fail "the images did not grow from 20 to 28 px"
check "config.json records the augmentations" \
  "grep -q '\"augment\": *\"trivial\"' '$t/ref/config.json' && grep -q '\"random_erasing\": *0.25' '$t/ref/config.json' &&
   grep -q '\"mixup\": *0.2' '$t/ref/config.json' && grep -q '\"cutmix\": *1.0' '$t/ref/config.json' && grep -q '\"ema\": *0.99' '$t/ref/config.json'"

# Waits until a checkpoint of step >= $1 is committed while $pid still runs.
wait_for_step() {
  local deadline=$((SECONDS + 120))
  until (($(newest_step "$t/int") >= $1)); do
    [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || fail "run ended before step $1"
    ((SECONDS < deadline)) || fail "no checkpoint of step $1 within 120 s"
    sleep 0.02
  done
}
resumed_step() {
  sed -n 's/.*resuming from ckpt-.* (epoch [0-9]*, step \([0-9]*\)).*/\1/p' "$1" | tail -1
}

# 1. SIGTERM mid-epoch (past step 8 of the first epoch): saved, exit 75.
frugal train "${args[@]}" --run "$t/int" > /dev/null 2> "$t/int1.log" &
pid=$!
wait_for_step 8
kill -TERM $pid || fail "SIGTERM did not reach the run"
set +e; wait $pid; rc=$?; set -e
pid=
[[ $rc == 75 ]] || fail "after SIGTERM: expected exit 75, got $rc"
stopped=$(sed -n 's/.*stopped (signal SIGTERM) at step \([0-9]*\), saved.*/\1/p' "$t/int1.log")
[[ -n $stopped ]] && ((stopped % per_epoch != 0 && stopped < total)) || fail "SIGTERM run did not stop mid-epoch ($stopped)"

# 2. Resumed; SIGKILLed once a checkpoint a few steps into the second epoch is saved; resumed to the end.
frugal train "${args[@]}" --run "$t/int" > /dev/null 2> "$t/int2.log" &
pid=$!
wait_for_step $((per_epoch + 6))
kill -KILL $pid || fail "SIGKILL did not reach the run"
set +e; wait $pid; rc=$?; set -e
pid=
[[ $rc == 137 ]] || fail "after SIGKILL: expected 137, got $rc"
[[ $(resumed_step "$t/int2.log") == "$stopped" ]] || fail "stopped at $stopped, the second run resumed elsewhere"
frugal train "${args[@]}" --run "$t/int" > /dev/null 2> "$t/int3.log" || fail "the last run"
last=$(resumed_step "$t/int3.log")
[[ -n $last ]] && ((last > per_epoch && last % per_epoch != 0)) || fail "the last run resumed at '$last', not mid-epoch past $stopped"
echo "run of $total steps ($per_epoch an epoch): SIGTERM at step $stopped, SIGKILL after step $((per_epoch + 6)), resumed at $last"

"$py" - "$t/ref" "$t/int" <<'PY'
import glob, os, re, sys
from safetensors.torch import load_file
def newest(run):
    files = [f for f in glob.glob(f"{run}/ckpt-*.safetensors") if ".delta." not in f]
    return max(files, key=lambda f: int(re.search(r"-s(\d+)", f).group(1)))
a, b = load_file(newest(sys.argv[1])), load_file(newest(sys.argv[2]))
assert os.path.basename(newest(sys.argv[1])) == os.path.basename(newest(sys.argv[2]))
assert any(k.startswith("frugal.trained.") for k in a), "no trained weights beside the average"
bad = [k for k in a if k not in b or not (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and bool((a[k] == b[k]).all()))]
print(f"compared {len(a)} tensors (weights and trainer state) of {os.path.basename(newest(sys.argv[1]))}: {len(bad)} differ")
assert not bad, bad
PY

expect_exit "a resume with another --augment is refused" 2 frugal train "${base[@]}" --augment flip --random-erasing 0.25 \
  --mixup 0.2 --cutmix 1.0 --ema 0.99 --run "$t/int"
expect_msg "...naming the option" "augment"
expect_exit "a resume with another --ema is refused" 2 frugal train "${args[@]}" --ema 0.9 --run "$t/int"
expect_msg "...naming it" "ema"

# The default recipe (crop and flip) learns other weights: the options reach the loader.
frugal train "${base[@]}" --run "$t/plain" > /dev/null 2> "$t/plain.log" || fail "run with the default recipe"
check "the augmented run's weights differ from the default recipe's" '! same_weights "$t/ref" "$t/plain" 2>/dev/null'

expect_exit "--decode gpu with --augment trivial is refused" 2 frugal train "${args[@]}" --decode gpu --run "$t/gpu"
expect_msg "...saying the CPU decodes them" "CPU loader"
finish
