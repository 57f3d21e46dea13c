#!/usr/bin/env bash
# The Python package's loader (issue 30): frugal.Loader iterated in a plain Python loop
# (`for images, labels in loader`, bench/python_loader.py) against, in the same run,
#   1. the recipe's Python pipeline (zipfile + PIL + torchvision + DataLoader), run exactly as
#      recipe_loader.py is written: target ratio >= 4;
#   2. what a PyTorch user writes today: a Dataset over the zip with zipfile (one ZipFile a worker),
#      torchvision.io.decode_jpeg + transforms.v2 RandomResizedCrop + RandomHorizontalFlip, uint8
#      out as frugal's, in a DataLoader (bench/python_loader.py torch): target ratio >= 2;
#   3. the CLI's own `frugal bench loader` on the same archive: target ratio >= 0.9 (the binding
#      and the Python loop cost under 10%).
# Same 2,400 stored JPEG photos as bench/loader.sh (scripts/make-photos.py, about 500x375, the
# same cached zip), 2 workers, batches of 64, 224 px random-resized-crop + flip (CPU decoding);
# frugal.Loader reads the training subset (95%, val_split=0.05), the others every image; each side
# skips its first batch. The sides run BENCH_ROUNDS times, alternating, and each ratio is the
# median of the rounds' ratios (this machine's speed drifts by 10% within minutes); every round's
# figures are printed beside it. About 2 minutes here.
# One run, 2026-12-03 (2 shared cores, nothing else running), medians of 3 rounds of 8 s:
# frugal.Loader 1,370-1,495 images/s; recipe 328-470 (ratio 4.18), torchvision v2 462-622 (2.41),
# `frugal bench loader` 1,402-1,578 (0.96).
# Builds nothing: expects FRUGAL_BIN (default build/bin) with frugal-torch, and the Python package
# in FRUGAL_BUILD/python (default build/python: its frugal/_core module, built with the project).
# Env: BENCH_SECONDS (per side and round, default 8), BENCH_ROUNDS (default 3), BENCH_DATA (cache
# folder for the generated archive), RECIPE_LOADER (default ../shared/bench/recipe_loader.py),
# FRUGAL_PYTHON (default .venv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FRUGAL_BIN:-$ROOT/build/bin}
BUILD=${FRUGAL_BUILD:-$ROOT/build}
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
SECS=${BENCH_SECONDS:-8}
ROUNDS=${BENCH_ROUNDS:-3}
DATA=${BENCH_DATA:-$ROOT/build/bench-data}
RECIPE=${RECIPE_LOADER:-$ROOT/../shared/bench/recipe_loader.py}
CPUS=${BENCH_CPUS:-0,1}
[[ -x $BIN/frugal-torch ]] || { echo "python_loader.sh: $BIN/frugal-torch not built (ninja frugal-torch)" >&2; exit 1; }
compgen -G "$BUILD/python/frugal/_core*.so" >/dev/null ||
  { echo "python_loader.sh: no Python module in $BUILD/python/frugal (ninja frugal_python, or set FRUGAL_BUILD)" >&2; exit 1; }
[[ -f $RECIPE ]] || { echo "python_loader.sh: recipe baseline $RECIPE not found (set RECIPE_LOADER)" >&2; exit 1; }
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
pin() { if command -v taskset >/dev/null; then taskset -c "$CPUS" "$@"; else "$@"; fi; }
# frugal prints one (indented) JSON document, the Python sides one JSON line after any noise.
rate() {
  "$PY" -c '
import json, sys
s = sys.stdin.read().strip()
try: d = json.loads(s)
except ValueError: d = json.loads(s.splitlines()[-1])
print(d["images_per_s"])'
}

mkdir -p "$DATA"
PHOTOS=$DATA/photos.zip
if [[ ! -f $PHOTOS ]]; then
  "$PY" "$ROOT/scripts/make-photos.py" "$DATA/photos" --count 2400 --zip "$PHOTOS.tmp" >&2 && mv "$PHOTOS.tmp" "$PHOTOS"
fi
COMMON=(--workers 2 --seconds "$SECS" --image-size 224)

load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo nan)
recipe=() torchvision=() python=() cli=()
for ((round = 0; round < ROUNDS; ++round)); do
  recipe+=("$(pin "$PY" "$RECIPE" "$PHOTOS" "${COMMON[@]}" | rate)")
  torchvision+=("$(pin "$PY" "$ROOT/bench/python_loader.py" torch "$PHOTOS" "${COMMON[@]}" --batch-size 64 | rate)")
  python+=("$(pin "$PY" "$ROOT/bench/python_loader.py" frugal "$PHOTOS" "${COMMON[@]}" --batch-size 64 | rate)")
  cli+=("$(pin "$BIN/frugal-torch" bench loader "$PHOTOS" "${COMMON[@]}" --batch-size 64 --decode cpu --json | rate)")
done
load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo nan)

# The 1-minute load average before and after: on a shared machine the ratios are only
# comparable at similar loads.
"$PY" - "${python[*]}" "${recipe[*]}" "${torchvision[*]}" "${cli[*]}" "$load_before" "$load_after" <<'PYEOF'
import json, statistics, sys
python, recipe, torchvision, cli = ([float(v) for v in a.split()] for a in sys.argv[1:5])
load = {"load_before": float(sys.argv[5]), "load_after": float(sys.argv[6])}
def report(name, base, target):
    ratios = [m / b for m, b in zip(python, base)]
    print(json.dumps({"bench": name, "ratio": statistics.median(ratios), "target": target,
                      "round_ratios": [round(r, 3) for r in ratios],
                      "frugal_images_per_s": [round(v, 1) for v in python],
                      "baseline_images_per_s": [round(v, 1) for v in base], **load}))
report("python_loader_vs_recipe_photos", recipe, 4.0)
report("python_loader_vs_torchvision_v2_photos", torchvision, 2.0)
report("python_loader_vs_cli_bench_loader_photos", cli, 0.9)
PYEOF
