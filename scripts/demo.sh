#!/usr/bin/env bash
# The whole workflow on Fashion-MNIST (Debian's dataset-fashion-mnist), in a small workspace with a
# disk budget and a deadline. A rerun reuses what is already there and is still correct.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export PATH="$PWD/$build/bin:$PATH"
ws=${FRUGAL_DEMO_DIR:-$PWD/demo-workspace}
budget=${FRUGAL_DEMO_BUDGET:-400M}
idx=/usr/share/datasets/fashion-mnist
py=${FRUGAL_PYTHON:-$PWD/.venv/bin/python}
mkdir -p "$ws/upload" "$ws/runs"

step() { printf '\n== %s\n' "$*" >&2; }
die() { echo "demo: $*" >&2; exit 1; }

# Peak disk use of the workspace, sampled in the background.
peak_file="$ws/.peak"
[ -f "$peak_file" ] || echo 0 >"$peak_file"  # a rerun keeps the first run's peak
( while :; do
    u=$(du -sb "$ws" 2>/dev/null | cut -f1)
    p=$(cat "$peak_file" 2>/dev/null || echo 0)
    [ "${u:-0}" -gt "${p:-0}" ] && echo "$u" >"$peak_file"
    sleep 0.5
  done ) &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT

step "1. pack Fashion-MNIST into zips, and split the training zip into parts for upload"
[ -f "$ws/fashion-test.zip" ] || frugal pack "$idx/t10k-images-idx3-ubyte.gz" -o "$ws/fashion-test.zip" || die "pack test"
[ -f "$ws/upload/fashion-train.zip.manifest.json" ] ||
  frugal pack "$idx/train-images-idx3-ubyte.gz" -o "$ws/upload/fashion-train.zip" --split 12M || die "pack train"
ls -la "$ws/upload" >&2

step "2. verify the parts, then train straight from them (no join)"
frugal verify "$ws/upload/fashion-train.zip.manifest.json" || die "verify"
# The same command every session: --deadline counts from each invocation, as on a notebook whose
# session ends; each session stops in time (exit 75) and the next one resumes where it stopped.
train=(frugal train --data "$ws/upload/fashion-train.zip.manifest.json" --val-split 0.1 --model cnn
       --run "$ws/runs/cnn" --epochs 2 --batch-size 128 --workers 2 --disk-budget "$budget"
       --workspace "$ws" --seed 1 --deadline "${FRUGAL_DEMO_DEADLINE:-45s}")

step "3. train in sessions cut by a deadline (exit 75); the same command resumes until done"
if [ ! -f "$ws/runs/cnn/.demo-done" ]; then
  for session in 1 2 3 4 5 6; do
    echo "-- session $session: ${train[*]}" >&2
    "${train[@]}"; rc=$?
    echo "-- session $session exit code: $rc" >&2
    [ $rc -eq 0 ] && break
    [ $rc -eq 75 ] || die "session $session exited $rc"
  done
  [ $rc -eq 0 ] || die "training did not finish in 6 sessions"
  touch "$ws/runs/cnn/.demo-done"
  echo "$session" >"$ws/runs/cnn/.demo-sessions"
fi

step "4. evaluate, compress (prune + int8), export ONNX and check it against frugal"
frugal eval "$ws/runs/cnn" --data "$ws/fashion-test.zip" --json >"$ws/eval.json" || die "eval"
frugal compress "$ws/runs/cnn" -o "$ws/cnn-small.safetensors" --prune 0.5 --prune-scope global --quantize int8 \
  --data "$ws/fashion-test.zip" --json >"$ws/compress.json" || die "compress"
frugal export "$ws/runs/cnn" --format onnx -o "$ws/cnn.onnx" || die "export"
"$py" scripts/check-onnx.py "$ws/cnn.onnx" "$ws/fashion-test.zip" --frugal "$(command -v frugal)" \
  --ckpt "$ws/runs/cnn" >"$ws/onnx-check.json" || die "ONNX check"

step "5. the run's page: curves, confusion matrix, worst images, facts"
frugal report "$ws/runs/cnn" --data "$ws/fashion-test.zip" -o "$ws/report.html" >/dev/null || die "report"

step "6. summary"
kill $sampler 2>/dev/null
"$py" - "$ws" "$budget" <<'PY'
import json, os, sys
ws, budget = sys.argv[1], sys.argv[2]
ev = json.load(open(f"{ws}/eval.json")); cp = json.load(open(f"{ws}/compress.json"))
ox = json.load(open(f"{ws}/onnx-check.json"))
peak = int(open(f"{ws}/.peak").read().strip() or 0)
sessions = open(f"{ws}/runs/cnn/.demo-sessions").read().strip()
size = lambda p: os.path.getsize(p) / 2**20
print(f"training sessions    {sessions} (each cut by its deadline but the last)")
print(f"peak workspace use   {peak/2**20:8.1f} MiB (budget {budget})")
print(f"trained cnn          accuracy {ev['accuracy']*100:5.2f}%  size {size(ws+'/runs/cnn/best.safetensors'):6.2f} MiB")
print(f"pruned 50% + int8    accuracy {cp['output']['accuracy']*100:5.2f}%  size {size(ws+'/cnn-small.safetensors'):6.2f} MiB ({cp['size_reduction']*100:.0f}% smaller than float32)")
print(f"ONNX                 agrees with frugal: max |diff| {ox['max_abs_diff']:.2e}, top-1 agreement {ox['top1_agreement']*100:.1f}%  size {size(ws+'/cnn.onnx'):6.2f} MiB")
print(f"report               {os.path.abspath(ws + '/report.html')} ({size(ws + '/report.html'):.2f} MiB): open it in a browser")
PY
