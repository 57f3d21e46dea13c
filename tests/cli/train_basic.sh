#!/usr/bin/env bash
# frugal train / eval / predict end to end on a tiny two-class PNG dataset: run folder contents,
# metrics, TensorBoard events, --config, resume of a finished run, eval --json, predict.
set -euo pipefail
py=${FRUGAL_PYTHON:-python3}
"$py" -c "import numpy, PIL" 2>/dev/null || { echo "skip: needs numpy + pillow in $py"; exit 77; }
command -v frugal-torch >/dev/null && command -v frugal >/dev/null || { echo "skip: frugal / frugal-torch not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# Class "bright" images are light, "dark" ones dark: learnable in a few steps.
"$py" - "$t/data.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
        for i in range(48):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(buf, "PNG")
            z.writestr(f"{cls}/{i:03d}.png", buf.getvalue())
PY
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
  [[ -f $t/run/$f ]] || { echo "missing $f"; cat "$t/log"; exit 1; }
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
grep -q "resuming" "$t/log2" || { echo "no resume"; cat "$t/log2"; exit 1; }
[[ $(wc -l <"$t/run/metrics.jsonl") -eq 4 ]]

frugal eval "$t/run" --data "$t/data.zip" --json >"$t/eval.json"
"$py" - "$t/eval.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert 0.9 <= r["accuracy"] <= 1 and r["loss"] >= 0 and set(r["per_class"]) == {"bright", "dark"}, r
PY
frugal predict "$t/run" "$t/data.zip:dark/000.png" --top 2 | grep -q "dark/000.png: dark"
echo ok
