#!/usr/bin/env bash
# The input pipeline: frugal's loader against
#   1. the recipe's Python pipeline (zipfile + PIL + torchvision + DataLoader), run exactly as
#      recipe_loader.py is written, with --workers 2: target ratio >= 4 on the photo set;
#   2. full-size TurboJPEG decoding of the same files with the same threads (tj_full_decode):
#      target ratio >= 0.8;
# 3. the recipe on Fashion-MNIST PNGs (reported; the recipe applies random-resized-crop to
# 28 px images, frugal the padded crop it uses for small images);
# and 4. what checking each stored photo's CRC-32 costs the loader: frugal with the check (as it
# always trains) against frugal with FRUGAL_BENCH_NO_CRC=1 (a switch for this A/B only), in the
# same alternating rounds; the ratio is checked/unchecked images/s.
# Same archive, 2 decode threads, 224 px random-resized-crop + flip. Builds nothing: expects
# FRUGAL_BIN (default build/bin) with frugal, frugal-torch and tj_full_decode.
# The photo sides run BENCH_ROUNDS times, alternating (recipe, frugal, TurboJPEG), and each ratio
# is the median of the rounds' ratios: this machine's speed drifts by 10% within minutes, so one
# pass per side can land a slow minute on either side. Every round's figures are printed too.
# Env: BENCH_SECONDS (per side and round, default 10), BENCH_ROUNDS (default 3), BENCH_DATA (cache
# folder for the generated archives), RECIPE_LOADER (default ../shared/bench/recipe_loader.py),
# FRUGAL_PYTHON (default .venv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FRUGAL_BIN:-$ROOT/build/bin}
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
DATA=${BENCH_DATA:-$ROOT/build/bench-data}
RECIPE=${RECIPE_LOADER:-$ROOT/../shared/bench/recipe_loader.py}
CPUS=${BENCH_CPUS:-0,1}
mkdir -p "$DATA"
for exe in frugal-torch tj_full_decode; do
  [[ -x $BIN/$exe ]] || { echo "loader.sh: $BIN/$exe not built (ninja frugal-torch tj_full_decode)" >&2; exit 1; }
done
[[ -f $RECIPE ]] || { echo "loader.sh: recipe baseline $RECIPE not found (set RECIPE_LOADER)" >&2; exit 1; }
pin() { if command -v taskset >/dev/null; then taskset -c "$CPUS" "$@"; else "$@"; fi; }
# frugal prints one (indented) JSON document, the Python baseline one JSON line after any noise.
rate() {
  "$PY" -c '
import json, sys
s = sys.stdin.read().strip()
try: d = json.loads(s)
except ValueError: d = json.loads(s.splitlines()[-1])
print(d["images_per_s"])'
}

PHOTOS=$DATA/photos.zip
if [[ ! -f $PHOTOS ]]; then
  "$PY" "$ROOT/scripts/make-photos.py" "$DATA/photos" --count 2400 --zip "$PHOTOS.tmp" >&2 && mv "$PHOTOS.tmp" "$PHOTOS"
fi
FASHION=$DATA/fashion.zip
if [[ ! -f $FASHION ]]; then
  "$PY" "$ROOT/scripts/make-fashion-zip.py" "$FASHION.tmp" --count 20000 >&2 && mv "$FASHION.tmp" "$FASHION"
fi

load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo nan)
py_photos=() fr_photos=() tj_photos=() nocrc_photos=()
for ((round = 0; round < ROUNDS; ++round)); do
  py_photos+=("$(pin "$PY" "$RECIPE" "$PHOTOS" --workers 2 --seconds "$SECS" --image-size 224 | rate)")
  fr_photos+=("$(pin "$BIN/frugal-torch" bench loader "$PHOTOS" --workers 2 --seconds "$SECS" --image-size 224 --json | rate)")
  tj_photos+=("$(pin "$BIN/tj_full_decode" "$PHOTOS" --workers 2 --seconds "$SECS" | rate)")
  nocrc_photos+=("$(FRUGAL_BENCH_NO_CRC=1 pin "$BIN/frugal-torch" bench loader "$PHOTOS" --workers 2 --seconds "$SECS" \
    --image-size 224 --json | rate)")
done
py_fashion=$(pin "$PY" "$RECIPE" "$FASHION" --workers 2 --seconds "$SECS" --image-size 28 | rate)
fr_fashion=$(pin "$BIN/frugal-torch" bench loader "$FASHION" --workers 2 --seconds "$SECS" --image-size 28 --json | rate)

load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo nan)

# The 1-minute load average before and after: on a shared machine the ratios are only
# comparable at similar loads.
"$PY" - "${py_photos[*]}" "${fr_photos[*]}" "${tj_photos[*]}" "${nocrc_photos[*]}" "$py_fashion" "$fr_fashion" \
  "$load_before" "$load_after" <<'PYEOF'
import json, statistics, sys
py, fr, tj, nocrc = ([float(v) for v in a.split()] for a in sys.argv[1:5])
pyf, frf, l0, l1 = map(float, sys.argv[5:])
load = {"load_before": l0, "load_after": l1}
def report(name, mine, base, target):
    ratios = [m / b for m, b in zip(mine, base)]
    d = {"bench": name, "ratio": statistics.median(ratios), "target": target,
         "round_ratios": [round(r, 3) for r in ratios],
         "frugal_images_per_s": [round(v, 1) for v in mine], "baseline_images_per_s": [round(v, 1) for v in base]}
    print(json.dumps({**d, **load}))
report("loader_vs_recipe_photos", fr, py, 4.0)
report("loader_vs_tj_full_decode_photos", fr, tj, 0.8)
report("loader_crc_checked_vs_unchecked_photos", fr, nocrc, 0.97)
print(json.dumps({"bench": "loader_vs_recipe_fashion_mnist", "ratio": frf / pyf,
                  "frugal_images_per_s": frf, "baseline_images_per_s": pyf, **load}))
PYEOF
