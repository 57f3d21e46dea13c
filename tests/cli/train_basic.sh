#!/usr/bin/env bash
# frugal train / eval / predict end to end on a tiny two-class PNG dataset: run folder contents,
# metrics, TensorBoard events, --config, resume of a finished run, eval --json, predict.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 48
cat > "$t/cfg.toml" <<'TOML'
model = "cnn"
epochs = 4
batch_size = 8
accum = 2
lr = 0.003
val_split = 0.25
workers = 1
TOML
frugal train --data "$t/data.zip" --run "$t/run" --config "$t/cfg.toml" 2>"$t/log"
for f in config.json metrics.jsonl best.safetensors; do
  [[ -f $t/run/$f ]] || die "missing $f" "$t/log"
done
ls "$t"/run/events.out.tfevents.* >/dev/null
"$py" - "$t/run" <<'PY'
import json, sys
run = sys.argv[1]
cfg = json.load(open(f"{run}/config.json"))
assert cfg["batch_size"] == 8 and cfg["accum"] == 2 and cfg["classes"] == ["bright", "dark"], cfg
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert [l["epoch"] for l in lines] == [1, 2, 3, 4], lines
assert lines[-1]["val_accuracy"] >= 0.9, lines[-1]
PY
# A finished run resumes and has nothing left to do.
frugal train --data "$t/data.zip" --run "$t/run" --config "$t/cfg.toml" 2>"$t/log2"
grep -q "resuming" "$t/log2" || die "no resume" "$t/log2"
[[ $(wc -l <"$t/run/metrics.jsonl") -eq 4 ]] || die "the resumed run added epochs" "$t/run/metrics.jsonl"

frugal eval "$t/run" --data "$t/data.zip" --json >"$t/eval.json"
"$py" - "$t/eval.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert 0.9 <= r["accuracy"] <= 1 and r["loss"] >= 0 and set(r["per_class"]) == {"bright", "dark"}, r
PY
frugal predict "$t/run" "$t/data.zip:dark/000.png" --top 2 | grep -q "dark/000.png: dark"
ok "train, resume, eval, predict"
finish
