#!/usr/bin/env bash
# Pipeline stages (train --pipeline N, issue 31) on the CPU with Gloo, launched as users launch them
# (torchrun's environment, and --nproc). Shows: a 2-stage pipeline with M micro-batches of B/M
# trains bitwise equal (weights, batch-norm statistics, optimizer state) to one process with
# --batch-size B/M --accum M; its checkpoint is one whole model (eval loads it, and its accuracy is
# the pipeline's evaluation's); --pipeline-split cuts where named and refuses unknown names with the
# model's pieces; kill -9 of stage 1 ends stage 0 within --dist-timeout (exit 1), and the rerun
# resumes and ends bitwise equal to the uninterrupted run; a stopped (hanging) stage ends the other
# within the timeout; a pipeline run resumes in one process; mistakes are refused with a hint; only
# stage 0 decodes images, and a batch it cut short (an undecodable image) is the same on all stages,
# in training and evaluation; a TorchScript nn.Sequential is cut between its children and trains
# bitwise as one process does; with --amp fp16 the stages share one loss scale and its skipped steps.
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
# ranks RUN LOGPREFIX ARGS...: rank 0 and rank 1 of 2 in the background (pids r0, r1)
# (WORLD=4 ranks ...: four, pids r0..r3)
WORLD=2
ranks() {
  local run=$1 log=$2 port r
  port=$(free_port)
  shift 2
  for ((r = 0; r < WORLD; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$WORLD LOCAL_WORLD_SIZE=$WORLD MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      frugal-torch train "$@" --run "$run" > "$log$r.out" 2> "$log$r.err" &
    pids+=($!)
    eval "r$r=$!"
  done
}
# one RUN LOG ARGS...: one process in a group of one (dropout draws as a pipeline's stages do)
one() {
  local run=$1 log=$2
  shift 2
  RANK=0 WORLD_SIZE=1 FRUGAL_FORCE_GROUP=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) \
    frugal-torch train "$@" --run "$run" > "$log.out" 2> "$log.err"
}
newest() { ls "$1" | grep '^ckpt-' | sort | tail -1; }
# tensors A B: the largest difference between the floating-point tensors of two checkpoints
# (weights, statistics, optimizer state; not the random generators', which stages keep apart)
tensors() {
  "$py" - "$@" <<'PY'
import sys
from safetensors.torch import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
keys = [k for k in a if a[k].is_floating_point()]
assert any(".exp_avg" in k for k in keys), "no optimizer state compared"
print(max(float((a[k].double() - b[k].double()).abs().max()) if a[k].numel() else 0.0 for k in keys))
PY
}
zero() { "$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) == 0.0 else 1)" "$1"; }
cnn=(--data "$t/digits.zip" --val "$t/val.zip" --model cnn --device cpu --workers 1 --deterministic --seed 3)

# --- A: 2 stages x 2 micro-batches of 4 against one process with --batch-size 4 --accum 2
one "$t/solo" "$t/solo" "${cnn[@]}" --epochs 2 --batch-size 4 --accum 2 --save-every 5steps || die "one process" "$t/solo.err"
ranks "$t/pipe" "$t/pipe" "${cnn[@]}" --epochs 2 --batch-size 8 --pipeline 2 --micro-batches 2 --save-every 5steps
wait $r0 || die "stage 0 failed" "$t/pipe0.err" "$t/pipe1.err"
wait $r1 || die "stage 1 failed" "$t/pipe1.err"
expect_msg "rank 0 says it is stage 0 of 2" "pipeline: stage 0 of 2 (gloo), a global batch of 8 images" "$t/pipe0.err"
expect_msg "and how the model was cut" "pipeline: 2 stages x 2 micro-batches a step, 1F1B (balanced by each piece's measured" "$t/pipe0.err"
check "stage 1 prints nothing" '[ ! -s "$t/pipe1.err" ]'
check "both end at the same step" '[ "$(newest "$t/pipe")" == "$(newest "$t/solo")" ]'
diff=$(tensors "$t/solo/$(newest "$t/solo")" "$t/pipe/$(newest "$t/pipe")")
check "the pipeline's weights and optimizer state equal one process's with --accum 2 (largest difference $diff)" 'zero "$diff"'
ck="$t/pipe/$(newest "$t/pipe")"
check "the checkpoint holds both stages' tensors under the whole model's names" \
  '"$py" -c "import sys; from safetensors import safe_open; k = set(safe_open(sys.argv[1], \"pt\").keys()); sys.exit(0 if {\"features.0.0.weight\", \"fc.weight\", \"fc1.weight\"} <= k else 1)" "$ck"'
last() { "$py" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "val_accuracy" in l][-1][sys.argv[2]])' "$@"; }
acc=$(last "$t/pipe/metrics.jsonl" val_accuracy)
solo_acc=$(last "$t/solo/metrics.jsonl" val_accuracy)
frugal eval "$ck" --data "$t/val.zip" --json > "$t/eval.json" 2> "$t/eval.err" || die "eval of the pipeline's checkpoint" "$t/eval.err"
one_acc=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["accuracy"])' "$t/eval.json")
check "the pipeline's evaluation ($acc) equals frugal eval of its checkpoint ($one_acc) and one process's ($solo_acc)" \
  '[ "$acc" == "$one_acc" ] && [ "$acc" == "$solo_acc" ]'
loss=$(last "$t/pipe/metrics.jsonl" val_loss)
one_loss=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["loss"])' "$t/eval.json")
check "and its validation loss ($loss) is frugal eval's ($one_loss)" \
  '"$py" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-5 * max(1e-3, abs(b)) else 1)" "$loss" "$one_loss"'

# --- B: --pipeline-split on resnet18: cut where named; an unknown name lists the pieces
res=(--data "$t/digits.zip" --val "$t/val.zip" --model resnet18 --image-size 32 --device cpu --workers 1 --deterministic)
ranks "$t/split" "$t/split" "${res[@]}" --epochs 1 --batch-size 16 --pipeline 2 --micro-batches 2 --pipeline-split layer3.0
wait $r0 && wait $r1 || die "the split run failed" "$t/split0.err" "$t/split1.err"
expect_msg "the cut is where it was asked" "stage 0 = stem..layer2.1" "$t/split0.err"
expect_msg "and stage 1 holds the rest" "stage 1 = layer3.0..head" "$t/split0.err"
ranks "$t/badsplit" "$t/badsplit" "${res[@]}" --epochs 1 --batch-size 16 --pipeline 2 --micro-batches 2 --pipeline-split layer9.0
set +e
wait $r0
rc=$?
wait $r1
set -e
check "an unknown piece name is a usage error (exit $rc)" '[ $rc -eq 2 ]'
expect_msg "naming the pieces" "the model's pieces, in order: stem, layer1.0, layer1.1" "$t/badsplit0.err"

# --- C: kill -9 of stage 1 after step 10's checkpoint: stage 0 ends within the bound; the rerun
# resumes and ends with the uninterrupted run's tensors
ranks "$t/int" "$t/int" "${cnn[@]}" --epochs 2 --batch-size 8 --pipeline 2 --micro-batches 2 --save-every 5steps \
  --dist-timeout 20s
deadline=$((SECONDS + 120))
until ls "$t/int" 2>/dev/null | grep -q 's000005'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 5" "$t/int0.err"
  kill -0 $r1 2>/dev/null || die "stage 1 ended before step 5" "$t/int1.err"
  sleep 0.05
done
kill -0 $r1 2>/dev/null || die "stage 1 ended before the kill" "$t/int1.err"
kill -KILL $r1
killed_at=$SECONDS
wait $r1 2>/dev/null || true
set +e
wait $r0
rc=$?
set -e
check "stage 0 exits 1 (lost contact) when stage 1 is killed (exit $rc)" '[ $rc -eq 1 ]'
check "within the 20 s bound ($((SECONDS - killed_at)) s)" '[ $((SECONDS - killed_at)) -le 20 ]'
expect_msg "stage 0 says what happened" "rank 0 of 2: expected the other ranks to answer" "$t/int0.err"
cp -r "$t/int" "$t/cont"  # for E: the interrupted run, resumed in one process
ranks "$t/int" "$t/rerun" "${cnn[@]}" --epochs 2 --batch-size 8 --pipeline 2 --micro-batches 2 --save-every 5steps \
  --dist-timeout 20s
wait $r0 && wait $r1 || die "the rerun failed" "$t/rerun0.err" "$t/rerun1.err"
expect_msg "the rerun resumes from a checkpoint" "resuming from ckpt-e" "$t/rerun0.err"
check "the rerun ends at the reference's step" '[ "$(newest "$t/int")" == "$(newest "$t/pipe")" ]'
diff=$(tensors "$t/pipe/$(newest "$t/pipe")" "$t/int/$(newest "$t/int")")
check "its tensors equal the uninterrupted pipeline's (largest difference $diff)" 'zero "$diff"'

# --- D: a stage that hangs (SIGSTOP) ends the other within --dist-timeout, with a message
ranks "$t/hang" "$t/hang" "${cnn[@]}" --epochs 50 --batch-size 8 --pipeline 2 --save-every 5steps --dist-timeout 5s
deadline=$((SECONDS + 120))
until ls "$t/hang" 2>/dev/null | grep -q 's000005'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 5" "$t/hang0.err"
  sleep 0.05
done
kill -STOP $r1
stopped_at=$SECONDS
set +e
wait $r0
rc=$?
set -e
kill -KILL $r1 2>/dev/null || true
check "stage 0 exits 1 when stage 1 hangs (exit $rc)" '[ $rc -eq 1 ]'
check "within about the 5 s timeout ($((SECONDS - stopped_at)) s)" '[ $((SECONDS - stopped_at)) -le 20 ]'
expect_msg "saying the other ranks did not answer" "expected the other ranks to answer" "$t/hang0.err"

# --- D2: SIGTERM to stage 1 alone: both stages stop after the same step, rank 0 saves it, both exit 75
ranks "$t/sig" "$t/sig" "${cnn[@]}" --epochs 200 --batch-size 8 --pipeline 2 --save-every 5steps
deadline=$((SECONDS + 120))
until ls "$t/sig" 2>/dev/null | grep -q 's000005'; do
  ((SECONDS < deadline)) || die "no checkpoint of step 5" "$t/sig0.err"
  sleep 0.05
done
kill -TERM $r1
set +e
wait $r1
rc1=$?
wait $r0
rc0=$?
set -e
check "SIGTERM to stage 1: both stages exit 75 (stage 0: $rc0, stage 1: $rc1)" '[ $rc0 -eq 75 ] && [ $rc1 -eq 75 ]'
sig_stop=$(sed -n 's/^stopped (signal on another rank) at step \([0-9]*\), saved.*/\1/p' "$t/sig0.err")
check "stage 0 stopped for stage 1's signal at step '$sig_stop' and saved it" \
  '[ -n "$sig_stop" ] && ls "$t/sig" | grep -q "s$(printf %06d "$sig_stop")"'

# --- E: the interrupted pipeline's checkpoint resumes in one process (by parameter name) and
# ends with one process's tensors
one "$t/cont" "$t/cont" "${cnn[@]}" --epochs 2 --batch-size 4 --accum 2 --save-every 5steps ||
  die "one process resuming the pipeline's run" "$t/cont.err"
expect_msg "one process resumes the pipeline's checkpoint" "resuming from ckpt-e" "$t/cont.err"
diff=$(tensors "$t/solo/$(newest "$t/solo")" "$t/cont/$(newest "$t/cont")")
check "and ends with the tensors of one process's uninterrupted run (largest difference $diff)" 'zero "$diff"'

# --- C2: --clip-grad-norm clips by the norm over both stages: a pipeline run with clipping that
# bites ends where one process's does (the norm summed in another order: to float rounding), and
# apart from the unclipped run
one "$t/clip1" "$t/clip1" "${cnn[@]}" --epochs 1 --batch-size 4 --accum 2 --clip-grad-norm 0.05 || die "one process, clipped" "$t/clip1.err"
ranks "$t/clip2" "$t/clip2" "${cnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --micro-batches 2 --clip-grad-norm 0.05
wait $r0 && wait $r1 || die "the clipped pipeline failed" "$t/clip20.err" "$t/clip21.err"
one "$t/noclip" "$t/noclip" "${cnn[@]}" --epochs 1 --batch-size 4 --accum 2 || die "one process, unclipped" "$t/noclip.err"
near=$(tensors "$t/clip1/$(newest "$t/clip1")" "$t/clip2/$(newest "$t/clip2")")
apart=$(tensors "$t/clip1/$(newest "$t/clip1")" "$t/noclip/$(newest "$t/noclip")")
# The bound is 1e-3: the norm summed in another order moves the clip coefficient by rounding, and
# 23 steps grow that to 4.2e-4 in a BN running mean of magnitude 1.6 (seen on a fresh machine in
# December 2026, where one process and the pipeline were each bitwise repeatable; 1e-4 had held
# before, the cause of the change not found); clipping bites 0.31, over 100x the bound's distance.
check "clipped: the pipeline is within 1e-3 of one process ($near) and the clipping bit ($apart from unclipped)" \
  '"$py" -c "import sys; n, a = map(float, sys.argv[1:]); sys.exit(0 if n <= 1e-3 and a > 100 * max(n, 1e-7) else 1)" "$near" "$apart"'

# --- H: 2 stages x 2 data-parallel replicas (4 processes). With one micro-batch a step each
# replica's stages compute what a data-parallel rank does, and the replicas sum their gradients as
# 2 data-parallel ranks do: bitwise equal to those. With 2 micro-batches, 1F1B and the replicas
# together: the evaluation equals frugal eval of the checkpoint.
ranks "$t/dp" "$t/dp" "${cnn[@]}" --epochs 1 --batch-size 8 --save-every 5steps
wait $r0 && wait $r1 || die "the 2-rank data-parallel run failed" "$t/dp0.err" "$t/dp1.err"
WORLD=4 ranks "$t/pp" "$t/pp" "${cnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --micro-batches 1 --save-every 5steps
wait $r0 && wait $r1 && wait $r2 && wait $r3 || die "2 stages x 2 replicas failed" "$t/pp0.err" "$t/pp1.err" "$t/pp2.err" "$t/pp3.err"
expect_msg "rank 0 says it is stage 0, replica 0 of 2" "pipeline: stage 0 of 2, replica 0 of 2 (gloo), a global batch of 16 images" "$t/pp0.err"
check "both end at the same step" '[ "$(newest "$t/pp")" == "$(newest "$t/dp")" ]'
diff=$(tensors "$t/dp/$(newest "$t/dp")" "$t/pp/$(newest "$t/pp")")
check "2 stages x 2 replicas equal 2 data-parallel ranks (largest difference $diff)" 'zero "$diff"'
WORLD=4 ranks "$t/pp2" "$t/pp2" "${cnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --micro-batches 2
wait $r0 && wait $r1 && wait $r2 && wait $r3 || die "2 stages x 2 replicas x 2 micro-batches failed" "$t/pp20.err" "$t/pp21.err"
loss=$(last "$t/pp2/metrics.jsonl" val_loss)
frugal eval "$t/pp2/$(newest "$t/pp2")" --data "$t/val.zip" --json > "$t/eval2.json" 2> "$t/eval2.err" || die "eval" "$t/eval2.err"
one_loss=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["loss"])' "$t/eval2.json")
check "its validation loss over both replicas' shards ($loss) is frugal eval's of its checkpoint ($one_loss)" \
  '"$py" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-5 * max(1e-3, abs(b)) else 1)" "$loss" "$one_loss"'
set +e
WORLD=3 ranks "$t/three" "$t/three" "${cnn[@]}" --epochs 1 --pipeline 2
wait $r0
rc=$?
wait $r1
wait $r2
set -e
check "3 processes for 2 stages is a usage error (exit $rc)" '[ $rc -eq 2 ]'
expect_msg "naming the multiple" "a number of processes that is a multiple of 2" "$t/three0.err"

# --- F: mistakes
set +e
frugal-torch train "${cnn[@]}" --epochs 1 --pipeline 2 --run "$t/alone" > /dev/null 2> "$t/alone.err"
rc=$?
set -e
check "--pipeline 2 in one process is a usage error (exit $rc)" '[ $rc -eq 2 ]'
expect_msg "with the launch to use" "add --nproc 2" "$t/alone.err"
set +e
frugal-torch train "${cnn[@]}" --epochs 1 --micro-batches 4 --run "$t/nomb" > /dev/null 2> "$t/nomb.err"
rc=$?
set -e
check "--micro-batches without --pipeline is a usage error (exit $rc)" '[ $rc -eq 2 ]'

# A TorchScript module whose forward only calls its top-level children in turn is cut between
# them: a scripted nn.Sequential (batch norm included) trains bitwise what one process does with
# --accum 2, and a traced one is cut where named; a module whose forward is code of its own is
# refused, saying why.
"$py" - "$t" <<'PY'
import sys, torch
torch.manual_seed(0)
seq = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 3))
torch.jit.script(seq).save(sys.argv[1] + "/seq.pt")
torch.jit.trace(seq, torch.zeros(2, 1, 28, 28)).save(sys.argv[1] + "/traced.pt")
PY
cat > "$t/own_module.py" <<'PY'
import sys, torch
class Own(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, x):
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(self.conv(x), 1), 1))
torch.jit.script(Own()).save(sys.argv[1])
PY
"$py" "$t/own_module.py" "$t/own.pt"
ts=(--data "$t/digits.zip" --val "$t/val.zip" --image-size 28 --device cpu --workers 1 --deterministic --seed 3 --epochs 1)
one "$t/seqsolo" "$t/seqsolo" "${ts[@]}" --model "$t/seq.pt" --batch-size 4 --accum 2 || die "one process, a scripted Sequential" "$t/seqsolo.err"
ranks "$t/seqpipe" "$t/seqpipe" "${ts[@]}" --model "$t/seq.pt" --batch-size 8 --pipeline 2 --micro-batches 2
wait $r0 && wait $r1 || die "2 stages of a scripted Sequential" "$t/seqpipe0.err" "$t/seqpipe1.err"
expect_msg "a scripted nn.Sequential is cut between its children" "forward and backward time): stage 0 = 0" "$t/seqpipe0.err"
diff=$(tensors "$t/seqsolo/$(newest "$t/seqsolo")" "$t/seqpipe/$(newest "$t/seqpipe")")
check "and its 2 stages train what one process does with --accum 2 (largest difference $diff)" 'zero "$diff"'
ranks "$t/traced" "$t/traced" "${ts[@]}" --model "$t/traced.pt" --batch-size 8 --pipeline 2 --pipeline-split 4
wait $r0 && wait $r1 || die "2 stages of a traced Sequential" "$t/traced0.err" "$t/traced1.err"
expect_msg "a traced one is cut where named" "stage 0 = 0..3 (" "$t/traced0.err"
ranks "$t/ts" "$t/ts" "${ts[@]}" --model "$t/own.pt" --pipeline 2
set +e
wait $r0
rc=$?
wait $r1
set -e
check "a TorchScript module with code of its own in forward is a usage error with --pipeline (exit $rc)" '[ $rc -eq 2 ]'
expect_msg "saying why: what it computes itself, and where" "its own code: its forward computes adaptive_avg_pool2d itself after its child \"conv\"" "$t/ts0.err"
set +e
frugal-torch train "${cnn[@]}" --epochs 1 --pipeline 2 --pipeline-split features.2 --pipeline-balance parameters --run "$t/both" > /dev/null 2> "$t/both.err"
rc=$?
set -e
check "--pipeline-split with --pipeline-balance parameters is a usage error (exit $rc)" '[ $rc -eq 2 ]'

# --- G: --nproc launches the stages too; --pipeline-balance parameters evens out the parameters
frugal-torch train "${cnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --nproc 2 --run "$t/nproc" > "$t/nproc.out" 2> "$t/nproc.err" ||
  die "--nproc 2 --pipeline 2" "$t/nproc.err"
check "--nproc 2 --pipeline 2 saves a checkpoint" '[ -n "$(newest "$t/nproc")" ]'
frugal-torch train "${res[@]}" --epochs 1 --batch-size 16 --pipeline 2 --micro-batches 2 --pipeline-balance parameters \
  --nproc 2 --run "$t/params" > "$t/params.out" 2> "$t/params.err" || die "--pipeline-balance parameters" "$t/params.err"
expect_msg "resnet18 balanced by parameters cuts inside layer4" "(balanced by parameters): stage 0 = stem..layer4.0" "$t/params.err"
# --- I: only stage 0 decodes (the later stages load labels alone and take each batch's sizes and
# labels from it): with an undecodable image in the data, which stage 0 leaves out of its batch,
# the pipeline still trains bitwise what one process does on the same data; with one in the
# validation set, it evaluates the images one process does.
cp "$t/digits.zip" "$t/bad.zip"
cp "$t/val.zip" "$t/badval.zip"
"$py" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'a').writestr('class1/005b.png', b'not a png at all')" "$t/bad.zip"
"$py" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'a').writestr('class0/000v.png', b'not a png either')" "$t/badval.zip"
badcnn=(--data "$t/bad.zip" --val "$t/badval.zip" --model cnn --device cpu --workers 1 --deterministic --seed 3 --max-bad-fraction 0.05)
one "$t/badsolo" "$t/badsolo" "${badcnn[@]}" --epochs 1 --batch-size 4 --accum 2 || die "one process, a bad image" "$t/badsolo.err"
ranks "$t/badpipe" "$t/badpipe" "${badcnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --micro-batches 2
wait $r0 && wait $r1 || die "2 stages, a bad image" "$t/badpipe0.err" "$t/badpipe1.err"
expect_msg "stage 0 met the undecodable image" "005b.png" "$t/badpipe0.err"
diff=$(tensors "$t/badsolo/$(newest "$t/badsolo")" "$t/badpipe/$(newest "$t/badpipe")")
check "with a batch one image short on stage 0, the stages still equal one process (largest difference $diff)" 'zero "$diff"'
n=$(last "$t/badpipe/metrics.jsonl" val_samples); solo_n=$(last "$t/badsolo/metrics.jsonl" val_samples)
acc=$(last "$t/badpipe/metrics.jsonl" val_accuracy); solo_acc=$(last "$t/badsolo/metrics.jsonl" val_accuracy)
loss=$(last "$t/badpipe/metrics.jsonl" val_loss); solo_loss=$(last "$t/badsolo/metrics.jsonl" val_loss)
check "an undecodable validation image: the pipeline evaluates what one process does ($n and $solo_n images, accuracy $acc and $solo_acc)" \
  '[ "$n" == "$solo_n" ] && [ "$acc" == "$solo_acc" ]'
check "and its validation loss ($loss) is one process's ($solo_loss)" \
  '"$py" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-5 * max(1e-3, abs(b)) else 1)" "$loss" "$solo_loss"'


# --- J: fp16 and its loss scaler (autocast on the CPU too): the stages share one scale and one
# found-inf decision, so 2 stages train bitwise what one process does with --accum 2, the scale
# included; the scale starts at 65536, and ending below it means steps were skipped, on both.
one "$t/fp16solo" "$t/fp16solo" "${cnn[@]}" --epochs 1 --batch-size 4 --accum 2 --amp fp16 || die "one process, fp16" "$t/fp16solo.err"
ranks "$t/fp16pipe" "$t/fp16pipe" "${cnn[@]}" --epochs 1 --batch-size 8 --pipeline 2 --micro-batches 2 --amp fp16
wait $r0 && wait $r1 || die "2 stages, fp16" "$t/fp16pipe0.err" "$t/fp16pipe1.err"
scales=$("$py" - "$t/fp16solo/$(newest "$t/fp16solo")" "$t/fp16pipe/$(newest "$t/fp16pipe")" <<'PY'
import sys
from safetensors.torch import load_file
print(" ".join(str(float(load_file(f)["frugal.loss_scaler.scale"])) for f in sys.argv[1:]))
PY
)
diff=$(tensors "$t/fp16solo/$(newest "$t/fp16solo")" "$t/fp16pipe/$(newest "$t/fp16pipe")")
check "fp16: the stages equal one process with --accum 2 (largest difference $diff)" 'zero "$diff"'
check "fp16: the same loss scale ($scales), below the first 65536: steps were skipped, on every stage alike" \
  'read a b <<<"$scales"; [ "$a" == "$b" ] && "$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 65536 else 1)" "$a"'

finish
