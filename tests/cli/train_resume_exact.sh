#!/usr/bin/env bash
# Exact resume: a --deterministic CPU run that is stopped by SIGTERM (exit 75) and then SIGKILLed
# twice, each time while it is training, and resumed each time, ends with weights and trainer
# state bitwise identical to an uninterrupted run. The signals are sent when a checkpoint of a chosen step
# appears (not on a timer), must reach a live process, and every resumed run must say where it
# resumed: a step strictly inside the run, past the previous resume point. Data: a zip of
# generated 28x28 PNGs (Python, PIL).
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal-torch
needs_python PIL safetensors torch
work=$t
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'
make_shapes_zip "$work/digits.zip" 60
# Enough steps (EPOCHS x images / 2) that each signal, sent a few steps after a run (re)starts,
# lands long before its end.
args=(--data "$work/digits.zip" --model cnn --epochs 3 --batch-size 2 --deterministic
      --device cpu --workers 1 --seed 7 --save-every 4steps --keep-last 2)

fail() { die "$*" "$work"/*.log >&2; }  # stderr: resumed_step runs in $(...)

frugal train "${args[@]}" --run "$work/ref" > /dev/null 2> "$work/ref.log" || fail "uninterrupted run"
total=$(sed -n 's/.*; \([0-9]*\) steps of .*/\1/p' "$work/ref.log" | head -1)
[[ $total -gt 100 ]] || fail "expected a run of more than 100 steps, found '$total'"

# Highest step among the run's committed checkpoints (0 when none).
newest_step() {
  local n=0 f s
  for f in "$work/int"/ckpt-*.safetensors; do
    [[ -e $f ]] || continue
    s=${f##*-s}; s=${s%%.*}; s=$((10#$s))
    ((s > n)) && n=$s
  done
  echo $n
}
# Waits until a checkpoint of step >= $1 is committed while $pid is still running.
wait_for_step() {
  local deadline=$((SECONDS + 120))
  until (($(newest_step) >= $1)); do
    [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || fail "run ended before step $1"
    ((SECONDS < deadline)) || fail "no checkpoint of step $1 within 120 s"
    sleep 0.02
  done
}
# Waits until the log $1 of the running $pid says where it resumed.
wait_for_resume() {
  local deadline=$((SECONDS + 120))
  until grep -q "resuming from" "$1"; do
    [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || fail "run ended without saying where it resumed"
    ((SECONDS < deadline)) || fail "$1: no resume line within 120 s"
    sleep 0.02
  done
}
# The step a run's log says it resumed from; it must lie strictly inside the run.
resumed_step() {
  local s
  s=$(sed -n 's/.*resuming from ckpt-.* (epoch [0-9]*, step \([0-9]*\)).*/\1/p' "$1" | tail -1)
  [[ -n $s ]] || fail "$1 does not say where it resumed"
  ((0 < s && s < total)) || fail "$1 resumed at step $s, not inside 1..$((total - 1))"
  echo "$s"
}

# 1. SIGTERM a few steps in: the run saves and exits 75, saying at which step.
frugal train "${args[@]}" --run "$work/int" > /dev/null 2> "$work/int1.log" &
pid=$!
wait_for_step 8
kill -TERM $pid || fail "SIGTERM did not reach the run"
set +e; wait $pid; rc=$?; set -e
pid=
[[ $rc == 75 ]] || fail "after SIGTERM: expected exit 75, got $rc"
stopped=$(sed -n 's/.*stopped (signal SIGTERM) at step \([0-9]*\), saved.*/\1/p' "$work/int1.log")
[[ -n $stopped ]] && ((8 <= stopped && stopped < total)) || fail "SIGTERM run did not say it stopped inside the run"
log="$work/int2.log"
frugal train "${args[@]}" --run "$work/int" > /dev/null 2> "$log" &
pid=$!
wait_for_resume "$log"
prev=$(resumed_step "$log")
[[ $prev == "$stopped" ]] || fail "stopped at step $stopped but resumed at $prev"
summary="SIGTERM at step $stopped (exit 75), resumed at $prev"

# 2. Twice: SIGKILL 12 steps after the resume point; the next run resumes from a later step.
for round in 1 2; do
  target=$((prev + 12))
  wait_for_step $target
  kill -KILL $pid || fail "SIGKILL did not reach the run"
  set +e; wait $pid; rc=$?; set -e
  pid=
  [[ $rc == 137 ]] || fail "after SIGKILL: expected the run to die of it (137), got $rc"
  log="$work/int$((round + 2)).log"
  frugal train "${args[@]}" --run "$work/int" > /dev/null 2> "$log" &
  pid=$!
  if ((round == 2)); then
    set +e; wait $pid; rc=$?; set -e
    pid=
    [[ $rc == 0 ]] || fail "the last run ended with exit $rc"
  else
    wait_for_resume "$log"
  fi
  now=$(resumed_step "$log")
  ((now >= target && now > prev)) || fail "killed after a checkpoint of step $target, resumed at $now"
  summary+=", SIGKILL once step $target was saved (137), resumed at $now"
  prev=$now
done
echo "interrupted run of $total steps: $summary"

"$py" - "$work/ref" "$work/int" <<'PY'
import glob, os, re, sys
from safetensors.torch import load_file
def newest(run):
    files = [f for f in glob.glob(f"{run}/ckpt-*.safetensors") if ".delta." not in f]
    return max(files, key=lambda f: int(re.search(r"-s(\d+)", f).group(1)))
a, b = load_file(newest(sys.argv[1])), load_file(newest(sys.argv[2]))
assert os.path.basename(newest(sys.argv[1])) == os.path.basename(newest(sys.argv[2]))
weights = [k for k in a if not k.startswith("frugal.")]
assert weights and sorted(weights) == sorted(k for k in b if not k.startswith("frugal.")), (sorted(a), sorted(b))
bad = [k for k in weights if not (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and bool((a[k] == b[k]).all()))]
state_bad = [k for k in a if k.startswith("frugal.") and (k not in b or not bool((a[k] == b[k]).all()))]
print(f"compared {len(weights)} weight tensors of {os.path.basename(newest(sys.argv[1]))}: {len(bad)} differ; "
      f"trainer state differing: {state_bad}")
assert not bad, bad
assert not state_bad, state_bad
PY
finish
