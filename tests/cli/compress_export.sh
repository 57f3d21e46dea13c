#!/usr/bin/env bash
# frugal compress / export end to end on a tiny two-class dataset: a trained cnn is pruned and
# quantized (file >= 70% smaller, accuracy kept), the compressed file works with eval, predict and
# export, and the exported ONNX passes onnx.checker and classifies like frugal under onnxruntime.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 48
frugal train --data "$t/data.zip" --run "$t/run" --model cnn --epochs 2 --batch-size 16 --lr 0.003 \
  --workers 1 2>"$t/train.log" || die "train" "$t/train.log"

# Usage errors: nothing to do, bad fraction.
expect_exit "a compress that does nothing is a usage error" 2 frugal compress "$t/run" -o "$t/x.safetensors"
expect_exit "--prune 1.5 is a usage error" 2 frugal compress "$t/run" -o "$t/x.safetensors" --prune 1.5

frugal compress "$t/run" -o "$t/small.safetensors" --prune 0.5 --prune-scope global --quantize int8 \
  --data "$t/data.zip" --json >"$t/compress.json" 2>"$t/compress.log"
"$py" - "$t/compress.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["size_reduction"] >= 0.70, r
assert r["output"]["bytes"] < 0.3 * r["input"]["float32_bytes"], r
assert abs(r["sparsity"] - 0.5) < 0.01, r
assert r["output"]["accuracy"] >= r["input"]["accuracy"] - 0.01, r
assert r["images"] == 96 and r["quantize"] == "int8" and "dequantized" in r["inference"], r
PY
# The human report shows before and after side by side, on stdout (the result; notes on stderr).
frugal compress "$t/run" -o "$t/half.safetensors" --quantize fp16 --data "$t/data.zip" >"$t/human.log" 2>/dev/null
grep -E "^size +[0-9.]+ ?[KMG]" "$t/human.log" >/dev/null || die "the report lacks the sizes" "$t/human.log"
grep -E "^accuracy +[0-9.]+%" "$t/human.log" >/dev/null || die "the report lacks the accuracies" "$t/human.log"

# The compressed file is a CKPT for eval, predict and export.
frugal eval "$t/small.safetensors" --data "$t/data.zip" --json >"$t/eval.json"
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['accuracy'] >= 0.9, r" "$t/eval.json"
frugal predict "$t/small.safetensors" "$t/data.zip:dark/000.png" --top 2 | grep -q "dark/000.png: dark"

"$py" -c "import onnx, onnxruntime" 2>/dev/null || { ok "compress (onnx export checks skipped: no onnx/onnxruntime)"; finish; exit 0; }
for ckpt in "$t/run" "$t/small.safetensors"; do
  frugal export "$ckpt" --format onnx -o "$t/m.onnx" 2>"$t/export.log" || die "export $ckpt" "$t/export.log"
  "$py" - "$t/m.onnx" "$t/data.zip" <<'PY'
import io, json, sys, zipfile
import numpy as np, onnx, onnxruntime as ort
from PIL import Image
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
props = {p.key: p.value for p in m.metadata_props}
classes, mean, std = json.loads(props["frugal.classes"]), json.loads(props["frugal.mean"]), json.loads(props["frugal.std"])
assert classes == ["bright", "dark"] and props["frugal.image_size"] == "28" and props["frugal.channels"] == "1", props
z = zipfile.ZipFile(sys.argv[2])
names = [n for n in z.namelist() if n.endswith(".png")]
x = np.stack([np.asarray(Image.open(io.BytesIO(z.read(n))), np.float32)[None] / 255 for n in names])
x = (x - mean[0]) / std[0]
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
pred = sess.run(None, {"input": x.astype(np.float32)})[0].argmax(1)
acc = np.mean([classes[p] == n.split("/")[0] for p, n in zip(pred, names)])
assert acc >= 0.9, acc
PY
done
ok "compressed, evaluated, predicted, exported"
finish
