#!/usr/bin/env bash
# A run folder is one training's alone, and frugal's. A notebook cell run twice: the second
# training of a run folder fails at once (exit 1) naming the first's pid, and reads or writes
# nothing there; the first goes on and its checkpoints, config and metrics are all its own (the
# first is held stopped while the second runs, so the overlap is certain, not a race). A --run into
# a folder frugal did not make (a Hugging Face model folder) is refused (exit 2) naming its files,
# with and without --fresh, every file as it was. compress and export -o into a run folder being
# trained wait their turn the same way.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

# Enough images that the epochs after the first outlast the poll below on a fast CPU (with 16 a
# class, all three epochs once ended inside one 0.1 s poll, and the "held" training was gone).
make_two_class_zip "$t/data.zip" 400
args=(--data "$t/data.zip" --model cnn --epochs 3 --batch-size 8 --val-split 0.25 --workers 1 --device cpu)
train() { timeout 60 frugal train "${args[@]}" "$@"; }
# Every file below $1 with its SHA-256 (no FIFOs here).
snapshot() { (cd "$1" && find . \( -type f -o -type l \) -print0 | sort -z | xargs -0 -r sha256sum); }

frugal train "${args[@]}" --run "$t/run" --lr 0.01 --seed 1 2>"$t/first.log" &
pid=$!
on_exit "kill -KILL $pid 2>/dev/null"
# Stopped after epoch 1 and its save (the save is written in the background, a few ms after the
# line): what the second training must leave alone is then all there.
for _ in $(seq 3000); do
  grep -q "^epoch 1/" "$t/first.log" && [ -f "$t/run/best.safetensors" ] && break
  kill -0 $pid 2>/dev/null || die "the first training ended early" "$t/first.log"
  sleep 0.02
done
grep -q "^epoch 1/" "$t/first.log" || die "the first training did not finish an epoch in 60 s" "$t/first.log"
kill -STOP $pid
# SIGSTOP arrives asynchronously: wait until every thread of it is stopped.
for _ in $(seq 500); do
  grep -qv '^T$' < <(for s in /proc/$pid/task/*/stat; do cut -d' ' -f3 "$s"; done) || break
  sleep 0.01
done
kill -0 $pid || die "the first training is not alive"
# Held inside its second epoch, or the overlap this test is about is not there (a training that
# had finished, releasing the folder, while still alive; seen with 16 images a class).
! grep -q "^epoch 2/" "$t/first.log" || die "the first training went past epoch 1 before it was held" "$t/first.log"
before=$(snapshot "$t/run")
[[ $before == *config.json* && $before == *metrics.jsonl* ]] || die "the first training wrote nothing yet: $before"

start=$SECONDS
expect_exit "a second training of the run folder fails (exit 1)" 1 train --run "$t/run" --lr 0.05 --seed 2
check "...at once (in $((SECONDS - start)) s), before loading the data" \
  '(( SECONDS - start < 20 )) && ! grep -q "^training " "$t/err"'
expect_msg "...naming the process that holds it" "in use by another frugal process (pid $pid"
expect_msg "...and what to do" "let it finish or stop it, then run the same command again"
check "...reading or writing nothing in the folder" '[ "$(snapshot "$t/run")" == "$before" ]'
expect_exit "--fresh is refused the same way" 1 train --run "$t/run" --lr 0.05 --seed 2 --fresh
check "...and removes nothing" '[ "$(snapshot "$t/run")" == "$before" ]'

# Commands that write a file into a run folder take its lock too.
expect_exit "compress -o into the run folder being trained waits its turn (exit 1)" 1 \
  frugal compress "$t/run" -o "$t/run/small.safetensors" --quantize int8
expect_msg "...naming the training" "in use by another frugal process (pid $pid"
expect_exit "export -o into it likewise" 1 frugal export "$t/run" --format onnx -o "$t/run/model.onnx"
check "...writing nothing there" '[ "$(snapshot "$t/run")" == "$before" ]'

kill -CONT $pid
rc=0
wait $pid || rc=$?
check "the first training finishes (exit 0)" '[ $rc -eq 0 ]'
"$py" - "$t/run" <<'PY' || die "the run folder holds another training's files" "$t/first.log"
import glob, json, struct, sys
run = sys.argv[1]
config = json.load(open(f"{run}/config.json"))
assert (config["lr"], config["seed"]) == (0.01, 1), config
epochs = [json.loads(l)["epoch"] for l in open(f"{run}/metrics.jsonl")]
assert epochs == [1, 2, 3], epochs
files = sorted(glob.glob(f"{run}/ckpt-*.safetensors")) + [f"{run}/best.safetensors"]
assert len(files) >= 2, files
for f in files:
    raw = open(f, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    c = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["config"])
    assert (c["lr"], c["seed"]) == (0.01, 1), (f, c)
PY
ok "config, metrics and every checkpoint are the first training's"

hub="$t/vit-base"
mkdir "$hub"
echo '{"architectures": ["ViTForImageClassification"], "model_type": "vit"}' >"$hub/config.json"
"$py" -c 'import struct, sys; h = b"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"; sys.stdout.buffer.write(struct.pack("<Q", len(h)) + h + bytes(8))' >"$hub/model.safetensors"
echo "# ViT" >"$hub/README.md"
echo '{"eval_loss": 0.3}' >"$hub/metrics.jsonl"
echo tb >"$hub/events.out.tfevents.1700000000.host.42.0"
before=$(snapshot "$hub")
for fresh in "" --fresh; do
  expect_exit "a Hugging Face model folder as --run is refused (exit 2) ${fresh}" 2 train --run "$hub" $fresh
  expect_msg "...naming its config" "config.json is not a frugal run configuration"
  expect_msg "...and its other files" "model.safetensors"
  expect_msg "...saying what to give" "train into a new or empty folder"
  check "...every file as it was" '[ "$(snapshot "$hub")" == "$before" ]'
done
finish
