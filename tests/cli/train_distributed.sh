#!/usr/bin/env bash
# Data-parallel training with torch.distributed (Gloo on the CPU), launched as users launch it:
# ranks started by hand with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR/PORT), by
# `frugal train --nproc 2` (which runs torchrun), by torchrun --max-restarts, and by two torchrun
# "nodes" on localhost. Shows: sharded evaluation equals a one-process eval of the checkpoint;
# only rank 0 speaks and writes; kill -9 of one rank stops the other within the bound, and the
# rerun ends with the tensors of an uninterrupted run; SIGTERM to one rank and a deadline stop both
# ranks at one step with
# one checkpoint, exit 75; resume 2 -> 1 and 1 -> 2 at the same global batch; torchrun's restart
# resumes by itself; 2 ranks with --sync-bn take the same first steps as one process of twice the
# batch, and without it differ (by design) at an unharmed accuracy.
# Data: zips of generated 28x28 PNGs (Python, PIL). The step-for-step equality over many steps
# is tests/train/distributed_test.cpp's (it controls the model: the zoo's all have batch norm).
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
needs_python PIL safetensors torch
torchrun=$(dirname "$py")/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) || skip "torchrun not found (it comes with torch: .venv/bin)"
export PATH=$(dirname "$torchrun"):$PATH OMP_NUM_THREADS=1
pids=()
on_exit 'for p in "${pids[@]}"; do kill -KILL $p 2>/dev/null; done'

make_shapes_zip "$t/digits.zip" 60 0
make_shapes_zip "$t/val.zip" 16 1

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# ranks RUN PORT LOGPREFIX ARGS...: starts rank 0 and rank 1 of 2 in the background (pids r0, r1)
ranks() {
  local run=$1 port=$2 log=$3
  shift 3
  local r
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      frugal-torch train "$@" --run "$run" > "$log$r.out" 2> "$log$r.err" &
    pids+=($!)
    eval "r$r=$!"
  done
}
newest() { ls "$1" | grep '^ckpt-' | sort | tail -1; }
# tensors A B [float]: the largest difference between the tensors of two checkpoints (trainer
# state too; with `float` only the floating-point ones: weights, statistics, optimizer state, not
# the random generator's state, which 1 process and 2 ranks keep differently)
tensors() {
  "$py" - "$@" <<'PY'
import sys
from safetensors.torch import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
keys = [k for k in a if len(sys.argv) < 4 or a[k].is_floating_point()]
print(max(float((a[k].double() - b[k].double()).abs().max()) if a[k].numel() else 0.0 for k in keys))
PY
}
cnn=(--data "$t/digits.zip" --val "$t/val.zip" --model cnn --device cpu --workers 1 --deterministic --seed 3)

# --- A: an uninterrupted 2-rank run; sharded evaluation; rank 0 alone speaks and writes
ranks "$t/ref" "$(free_port)" "$t/ref" "${cnn[@]}" --epochs 3 --batch-size 4 --save-every 10steps
wait $r0 || die "rank 0 of the reference run failed" "$t/ref0.err"
wait $r1 || die "rank 1 of the reference run failed" "$t/ref1.err"
expect_msg "rank 0 says it is one of two ranks" "distributed: rank 0 of 2 (gloo), a global batch of 8 images" "$t/ref0.err"
check "rank 1 prints no progress" '! grep -q "^epoch" "$t/ref1.err"'
check "rank 1 prints nothing at all" '[ ! -s "$t/ref1.err" ]'
# The last epoch's figures (48 validation images, 24 a rank) against `frugal eval` of its checkpoint:
# the accuracy, and the loss (a sum over all images: it also fails when an image is counted twice
# or missed).
last() { "$py" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "val_accuracy" in l][-1][sys.argv[2]])' "$@"; }
acc=$(last "$t/ref/metrics.jsonl" val_accuracy)
loss=$(last "$t/ref/metrics.jsonl" val_loss)
frugal eval "$t/ref/$(newest "$t/ref")" --data "$t/val.zip" --json > "$t/eval.json" 2> "$t/eval.err" || die "eval" "$t/eval.err"
one=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["accuracy"])' "$t/eval.json")
one_loss=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["loss"])' "$t/eval.json")
check "the 2-rank run's sharded accuracy ($acc) equals a 1-process eval of its checkpoint ($one)" '[ "$acc" == "$one" ]'
check "and its loss ($loss, 1 process: $one_loss)" \
  '"$py" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-5 * max(1e-3, abs(b)) else 1)" "$loss" "$one_loss"'
check "a checkpoint records the world size" \
  '"$py" -c "import json,sys; from safetensors import safe_open; m = safe_open(sys.argv[1], \"pt\").metadata(); sys.exit(0 if json.loads(m[\"config\"])[\"world_size\"] == 2 else 1)" "$t/ref/$(newest "$t/ref")"'

# --- B: kill -9 of rank 1 after the checkpoint of step 20: rank 0 stops within the bound; the rerun
# resumes there and ends with the reference's tensors
ranks "$t/int" "$(free_port)" "$t/int" "${cnn[@]}" --epochs 3 --batch-size 4 --save-every 10steps --dist-timeout 20s
deadline=$((SECONDS + 120))
until ls "$t/int" 2>/dev/null | grep -q 's000020'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 20" "$t/int0.err"
  kill -0 $r1 2>/dev/null || die "rank 1 ended before step 20" "$t/int1.err"
  sleep 0.05
done
kill -KILL $r1
killed_at=$SECONDS
wait $r1 2>/dev/null || true
set +e
wait $r0
rc=$?
set -e
check "rank 0 exits 1 (I/O: lost contact) when rank 1 is killed, not 0 or a hang (exit $rc)" '[ $rc -eq 1 ]'
check "within the 20 s bound ($((SECONDS - killed_at)) s)" '[ $((SECONDS - killed_at)) -le 20 ]'
expect_msg "rank 0 says what happened" "rank 0 of 2: expected the other ranks to answer" "$t/int0.err"
ranks "$t/int" "$(free_port)" "$t/rerun" "${cnn[@]}" --epochs 3 --batch-size 4 --save-every 10steps --dist-timeout 20s
wait $r0 && wait $r1 || die "the rerun failed" "$t/rerun0.err" "$t/rerun1.err"
expect_msg "the rerun resumes from a checkpoint after step 1" "resuming from ckpt-e" "$t/rerun0.err"
check "the rerun ends at the reference's step" '[ "$(newest "$t/int")" == "$(newest "$t/ref")" ]'
diff=$(tensors "$t/ref/$(newest "$t/ref")" "$t/int/$(newest "$t/int")")
check "its weights and trainer state equal the uninterrupted run's (largest difference $diff)" \
  '"$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) == 0.0 else 1)" "$diff"'

# --- B2: SIGTERM to rank 1 alone: both ranks stop at one step, rank 0 saves it, both exit 75
ranks "$t/sig" "$(free_port)" "$t/sig" "${cnn[@]}" --epochs 200 --batch-size 4 --save-every 10steps
deadline=$((SECONDS + 120))
until ls "$t/sig" 2>/dev/null | grep -q 's000010'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 10" "$t/sig0.err"
  sleep 0.05
done
kill -TERM $r1
set +e
wait $r1
rc1=$?
wait $r0
rc0=$?
set -e
check "SIGTERM to rank 1: both ranks exit 75 (rank 0: $rc0, rank 1: $rc1)" '[ $rc0 -eq 75 ] && [ $rc1 -eq 75 ]'
sig_stop=$(sed -n 's/^stopped (signal on another rank) at step \([0-9]*\), saved.*/\1/p' "$t/sig0.err")
check "rank 0 stopped for rank 1's signal at step '$sig_stop' and saved it" \
  '[ -n "$sig_stop" ] && [[ $(newest "$t/sig") == *-s$(printf %06d "$sig_stop").safetensors ]]'

# --- C: --nproc 2 (torchrun) with a deadline: both ranks stop at one step, one checkpoint, exit 75
set +e
frugal train "${cnn[@]}" --epochs 200 --batch-size 4 --nproc 2 --deadline 6s --run "$t/dl" > "$t/dl.out" 2> "$t/dl.err"
rc=$?
set -e
check "--nproc 2 cut by --deadline exits 75 (exit $rc)" '[ $rc -eq 75 ]'
stop=$(sed -n 's/^stopped (deadline) at step \([0-9]*\), saved.*/\1/p' "$t/dl.err")
check "rank 0 says where it stopped ('$stop')" '[ -n "$stop" ]'
check "torchrun saw both ranks exit 75" '[ $(grep -A1 "^ *rank *: [01] " "$t/dl.err" | grep -c "^ *exitcode *: 75 ") -eq 2 ]'
check "one checkpoint of the stop's step, the newest" \
  '[ $(ls "$t/dl" | grep -c "s$(printf %06d "$stop")\.safetensors") -eq 1 ] && [[ $(newest "$t/dl") == *-s$(printf %06d "$stop").safetensors ]]'

# --- D: resume 2 -> 1 (batch 8: the same global batch) and 1 -> 2; another batch is refused
expect_exit "1 process of batch 4 may not resume 2 ranks of 4" 2 frugal train "${cnn[@]}" --epochs 200 --batch-size 4 --run "$t/dl"
expect_msg "naming the global batch" "effective batch (batch_size x accum x processes): 8 -> 4"
set +e
frugal train "${cnn[@]}" --epochs 200 --batch-size 8 --deadline 4s --run "$t/dl" > "$t/one.out" 2> "$t/one.err"
rc=$?
set -e
check "1 process resumes the 2-rank run and is cut again (exit $rc)" '[ $rc -eq 75 ]'
expect_msg "from the 2-rank run's stop" ", step $stop)" "$t/one.err"
stop1=$(sed -n 's/^stopped (deadline) at step \([0-9]*\), saved.*/\1/p' "$t/one.err")
set +e
frugal train "${cnn[@]}" --epochs 200 --batch-size 4 --nproc 2 --deadline 4s --run "$t/dl" > "$t/two.out" 2> "$t/two.err"
rc=$?
set -e
check "2 ranks resume the 1-process run (exit $rc)" '[ $rc -eq 75 ]'
expect_msg "from its stop" ", step $stop1)" "$t/two.err"

# --- E: torchrun --max-restarts 1: a rank killed mid-run, the restarted group resumes by itself
"$torchrun" --standalone --nproc-per-node 2 --max-restarts 1 --no-python -- \
  frugal-torch train "${cnn[@]}" --epochs 6 --batch-size 4 --save-every 10steps --run "$t/el" > "$t/el.out" 2> "$t/el.err" &
agent=$!
pids+=($agent)
deadline=$((SECONDS + 120))
until ls "$t/el" 2>/dev/null | grep -q 's000020'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 20 under torchrun" "$t/el.err"
  sleep 0.05
done
victim=$(pgrep -P $agent -f "frugal-torch train" | head -1 || true)
[[ -z $victim ]] && victim=$(pgrep -f "frugal-torch train .*--run $t/el" | tail -1)
check "a rank of the torchrun group is found to kill" '[ -n "$victim" ]'
kill -KILL $victim
set +e
wait $agent
rc=$?
set -e
check "the restarted group finishes the run (torchrun exit $rc)" '[ $rc -eq 0 ]'
expect_msg "and resumed by itself" "resuming from ckpt-e" "$t/el.err"
check "to the run's last step" '[ "$(newest "$t/el")" == "ckpt-e0006-s000138.safetensors" ]'

# --- F: two nodes on localhost, one rank each, c10d rendezvous
port=$(free_port)
for n in 0 1; do
  "$torchrun" --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$port --rdzv-id frugal-test \
    --no-python -- frugal-torch train "${cnn[@]}" --epochs 1 --batch-size 4 --run "$t/nodes" > "$t/node$n.out" 2> "$t/node$n.err" &
  pids+=($!)
  eval "node$n=$!"
done
wait $node0 && wait $node1 || die "two torchrun nodes" "$t/node0.err" "$t/node1.err"
check "the two nodes trained one run of 2 ranks" 'grep -q "distributed: rank 0 of 2" "$t/node0.err" "$t/node1.err"'
check "to its end" '[ "$(newest "$t/nodes")" == "ckpt-e0001-s000023.safetensors" ]'

# --- G: --sync-bn: 2 ranks x 4 take the first steps of 1 process x 8 (resnet18: batch norm, no
# dropout; SGD, whose step is linear in the gradient). Without --sync-bn each rank normalises by
# its 4 images: the steps differ by design. Float sums in another order differ in the last bits,
# which batch norm over a few values (layer4 sees 8 values a channel) amplifies ~700x a step:
# compared after the first step. 24 images: 3 steps of 8, a checkpoint each (resnet18's checkpoint
# is ~130 MB; the whole 180-image set made 23 per run, 9 GB for the three, and filled CI's disk).
make_shapes_zip "$t/few.zip" 8 2
res=(--data "$t/few.zip" --val "$t/val.zip" --model resnet18 --image-size 32 --device cpu --workers 1 --deterministic
     --optimizer sgd --lr 0.005 --epochs 1 --save-every 1steps --keep-last 30 --keep-best 0)
frugal train "${res[@]}" --sync-bn --batch-size 8 --run "$t/bn1" > /dev/null 2> "$t/bn1.err" || die "1 process" "$t/bn1.err"
ranks "$t/bn2" "$(free_port)" "$t/bn2" "${res[@]}" --sync-bn --batch-size 4
wait $r0 && wait $r1 || die "2 ranks --sync-bn" "$t/bn20.err"
ranks "$t/bnx" "$(free_port)" "$t/bnx" "${res[@]}" --batch-size 4
wait $r0 && wait $r1 || die "2 ranks without --sync-bn" "$t/bnx0.err"
s1=ckpt-e0000-s000001.safetensors s2=ckpt-e0000-s000002.safetensors
sync_diff=$(tensors "$t/bn1/$s1" "$t/bn2/$s1" float)
plain_diff=$(tensors "$t/bn1/$s1" "$t/bnx/$s1" float)
echo "largest difference from 1 process x 8 after step 1: --sync-bn $sync_diff, without $plain_diff;" \
  "after step 2: --sync-bn $(tensors "$t/bn1/$s2" "$t/bn2/$s2" float), without $(tensors "$t/bn1/$s2" "$t/bnx/$s2" float)"
check "--sync-bn: within 1e-4 of one process after a step ($sync_diff)" '"$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1e-4 else 1)" "$sync_diff"'
check "without: 1000x further ($plain_diff)" '"$py" -c "import sys; sys.exit(0 if float(sys.argv[2]) > 1000 * float(sys.argv[1]) else 1)" "$sync_diff" "$plain_diff"'
# ... and the accuracy is unharmed: cnn, 2 ranks without --sync-bn against 1 process.
frugal train "${cnn[@]}" --epochs 3 --batch-size 8 --run "$t/cnn1" > /dev/null 2> "$t/cnn1.err" || die "cnn 1 process" "$t/cnn1.err"
acc1=$("$py" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "val_accuracy" in l][-1]["val_accuracy"])' "$t/cnn1/metrics.jsonl")
echo "val accuracy: 1 process x 8 $acc1, 2 ranks x 4 (per-rank batch norm) $acc"
check "2 ranks without --sync-bn: accuracy within 5 points of 1 process ($acc vs $acc1)" \
  '"$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) - 0.05 else 1)" "$acc" "$acc1"'
# --- H: a deadline too close for one step on rank 1 alone (a rank started late or slower): every
# rank refuses the run (exit 4, nothing written), not rank 1 alone while rank 0 waits in vain
# (exit 1). Rank 1's first step (resnet18 at 224 px, 64 images, one thread: ~7 s here, 2.3 GB)
# cannot fit with a save in its 3 s (it would need 1.8 s or less); rank 0 has ten minutes.
slow=(--data "$t/digits.zip" --model resnet18 --image-size 224 --batch-size 64 --device cpu --workers 1 --epochs 1
      --dist-timeout 60s --run "$t/close")
port=$(free_port)
for r in 0 1; do
  if [[ $r == 1 ]]; then d=3s; else d=10m; fi
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    frugal-torch train "${slow[@]}" --deadline $d > "$t/close$r.out" 2> "$t/close$r.err" &
  pids+=($!)
  eval "r$r=$!"
done
rc0=0 rc1=0
wait $r1 || rc1=$?
wait $r0 || rc0=$?
expect_msg "rank 1's first step did not fit in its deadline" "deadline: expected time for at least one step and a save (about" "$t/close1.err"
check "rank 1 exits 4 ($rc1)" '[ $rc1 == 4 ]'
check "rank 0 exits 4 with it, not 1 ($rc0)" '[ $rc0 == 4 ]'
expect_msg "...saying why" "time for at least one step and a save on every process" "$t/close0.err"
check "nothing was written" '! ls "$t/close" 2>/dev/null | grep -q "^ckpt-"'
finish
