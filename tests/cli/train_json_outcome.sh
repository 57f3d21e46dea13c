#!/usr/bin/env bash
# train --json prints the outcome as one document on stdout, however the run ends (CLI.md): a
# finished run (figures held to its metrics.jsonl and best.safetensors, skipped files by reason), a
# finished run run again (the figures come from its checkpoint), a run stopped by SIGTERM (exit 75,
# resumable step) and a refused run (exit 3, the error).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'

make_two_class_zip "$t/data.zip" 24
# Files the dataset leaves out, one of each reason: counted in "skipped".
"$py" - "$t/data.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "a") as z:
    z.writestr("bright/notes.txt", "not an image")
    z.writestr("__MACOSX/bright/._000.png", b"\0\5\26\7")
    z.writestr("dark/.DS_Store", b"\0\0\0\1Bud1")
PY
args=(--data "$t/data.zip" --model cnn --batch-size 8 --workers 1 --device cpu --val-split 0.25 --json)

# 1. A finished run.
frugal train "${args[@]}" --epochs 3 --run "$t/run" > "$t/done.json" 2> "$t/done.log" || die "train --json" "$t/done.log"
"$py" - "$t/done.json" "$t/run" <<'PY'
import json, sys
from safetensors import safe_open
text, run = open(sys.argv[1]).read(), sys.argv[2]
doc = json.loads(text)  # one document, nothing else on stdout
metrics = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
last, best = metrics[-1], max(metrics, key=lambda m: m["val_accuracy"])
assert doc["exit_code"] == 0 and doc["status"] == "done" and doc["stop_reason"] is None, doc
assert doc["run"] == run and doc["epochs"] == 3 == len(metrics), doc
assert doc["steps"] == last["step"] and doc["resumable_step"] == last["step"], doc
assert doc["val_accuracy"] == last["val_accuracy"] and doc["val_loss"] == last["val_loss"], (doc, last)
assert doc["best_checkpoint"] == f"{run}/best.safetensors", doc
with safe_open(doc["best_checkpoint"], "pt") as f:
    md = f.metadata()
assert doc["best_val_accuracy"] == float(md["metric_value"]) == best["val_accuracy"], (doc, md)
assert doc["best_epoch"] == int(md["epoch"]), (doc, md)
assert doc["classes"] == 2 and doc["train_images"] + doc["val_images"] == 48, doc
assert doc["skipped"] == {"not an image": 1, "junk (__MACOSX)": 1, "junk (.DS_Store)": 1}, doc["skipped"]
assert doc["val_skipped"] == {}, doc
PY
ok "a finished run's outcome matches its metrics and best.safetensors"

# 2. Run again: nothing is left to train; the figures are the checkpoint's.
frugal train "${args[@]}" --epochs 3 --run "$t/run" > "$t/again.json" 2> "$t/again.log" || die "rerun" "$t/again.log"
[[ $(wc -l < "$t/run/metrics.jsonl") == 3 ]] || die "the rerun trained again" "$t/run/metrics.jsonl"
"$py" - "$t/done.json" "$t/again.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("epochs", "steps", "val_accuracy", "val_loss", "best_val_accuracy", "best_epoch", "skipped"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
ok "a finished run run again reports the same outcome"

# 3. SIGTERM once a checkpoint exists: stopped, exit 75, the step a rerun continues from.
frugal train "${args[@]}" --epochs 200 --save-every 2steps --run "$t/stop" > "$t/stop.json" 2> "$t/stop.log" &
pid=$!
until compgen -G "$t/stop/ckpt-*.safetensors" > /dev/null; do
  [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || die "the run ended before its first checkpoint" "$t/stop.log"
  sleep 0.05
done
kill -TERM $pid || die "SIGTERM did not reach the run" "$t/stop.log"
set +e; wait $pid; rc=$?; set -e
pid=
[[ $rc == 75 ]] || die "after SIGTERM: expected exit 75, got $rc" "$t/stop.log"
"$py" - "$t/stop.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["exit_code"] == 75 and doc["status"] == "stopped" and "SIGTERM" in doc["stop_reason"], doc
assert 0 < doc["resumable_step"] <= doc["steps"] and doc["epochs"] < 200, doc
PY
ok "a stopped run says so, with the step a rerun continues from"

# 4. Refused: exit 3, the document carries the error (stderr has it too).
mkdir -p "$t/one/only"
cp "$src/README.md" "$t/one/only/x.txt"
set +e; frugal train --data "$t/one" --run "$t/bad" --device cpu --json > "$t/bad.json" 2> "$t/bad.log"; rc=$?; set -e
[[ $rc == 3 ]] || die "a folder without images: expected exit 3, got $rc" "$t/bad.log"
"$py" - "$t/bad.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["exit_code"] == 3 and doc["status"] == "failed" and "class" in doc["error"], doc
PY
ok "a refused run's document carries the exit code and the error"

finish
