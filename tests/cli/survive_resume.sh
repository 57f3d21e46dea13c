#!/usr/bin/env bash
# Exact resume: a --deterministic CPU run that is SIGKILLed at random moments (and once stopped by
# SIGTERM, which must exit 75) and resumed each time ends with weights bitwise identical to an
# uninterrupted run. Data: a zip of generated 28x28 PNGs (Python, PIL).
set -euo pipefail
py=${FRUGAL_PYTHON:-python3}
command -v frugal-torch >/dev/null || { echo "skip: frugal-torch not built"; exit 77; }
"$py" -c 'import PIL, safetensors, torch' 2>/dev/null || { echo "skip: python lacks PIL/safetensors/torch"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" - "$work/digits.zip" <<'PY'
import io, random, sys, zipfile
from PIL import Image, ImageDraw
rng = random.Random(0)
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for label in range(3):
        for i in range(60):
            im = Image.new("L", (28, 28), 0)
            d = ImageDraw.Draw(im)
            x, y = rng.randint(2, 10), rng.randint(2, 10)
            if label == 0:
                d.ellipse((x, y, x + 14, y + 14), fill=255)
            elif label == 1:
                d.rectangle((x, y, x + 14, y + 14), fill=255)
            else:
                d.line((x, y, x + 14, y + 14), fill=255, width=3)
            buf = io.BytesIO()
            im.save(buf, "PNG")
            z.writestr(f"class{label}/{i:03d}.png", buf.getvalue())
PY
args=(--data "$work/digits.zip" --model cnn --epochs 3 --batch-size 8 --deterministic --device cpu
      --workers 1 --seed 7 --save-every 4steps --keep-last 2)

frugal train "${args[@]}" --run "$work/ref" > /dev/null 2> "$work/ref.log" || { cat "$work/ref.log"; exit 1; }

# Interrupted run: SIGTERM once (exit 75 expected), then SIGKILL at random moments until it finishes.
set +e
frugal train "${args[@]}" --run "$work/int" > /dev/null 2>> "$work/int.log" &
pid=$!
sleep 3
kill -TERM $pid
wait $pid
rc=$?
set -e
[[ $rc == 75 || $rc == 0 ]] || { echo "SIGTERM: expected exit 75, got $rc"; cat "$work/int.log"; exit 1; }
kills=0
for attempt in $(seq 1 8); do
  frugal train "${args[@]}" --run "$work/int" > /dev/null 2>> "$work/int.log" &
  pid=$!
  sleep "$("$py" -c "import random; print(round(random.Random($attempt).uniform(0.5, 4.0), 2))")"
  if kill -KILL $pid 2>/dev/null; then
    wait $pid 2>/dev/null || true
    kills=$((kills + 1))
  else
    set +e; wait $pid; rc=$?; set -e
    [[ $rc == 0 ]] && break
    echo "run ended with exit $rc"; tail -20 "$work/int.log"; exit 1
  fi
done
# Make sure it has finished (the last attempt may have been killed).
frugal train "${args[@]}" --run "$work/int" > /dev/null 2>> "$work/int.log" || { tail -20 "$work/int.log"; exit 1; }
echo "interrupted run: 1 SIGTERM (exit $rc) + $kills SIGKILLs"

"$py" - "$work/ref" "$work/int" <<'PY'
import glob, os, re, sys
from safetensors.torch import load_file
def newest(run):
    files = [f for f in glob.glob(f"{run}/ckpt-*.safetensors") if ".delta." not in f]
    return max(files, key=lambda f: int(re.search(r"-s(\d+)", f).group(1)))
a, b = load_file(newest(sys.argv[1])), load_file(newest(sys.argv[2]))
weights = [k for k in a if not k.startswith("frugal.")]
assert weights and sorted(weights) == sorted(k for k in b if not k.startswith("frugal.")), (sorted(a), sorted(b))
bad = [k for k in weights if not (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and bool((a[k] == b[k]).all()))]
state_bad = [k for k in a if k.startswith("frugal.") and (k not in b or not bool((a[k] == b[k]).all()))]
print(f"compared {len(weights)} weight tensors of {os.path.basename(newest(sys.argv[1]))}: {len(bad)} differ; "
      f"trainer state differing: {state_bad}")
assert not bad, bad
PY
