#!/usr/bin/env bash
# Resuming with other options: session options (deadline, workers, save cadence) follow the new
# command; options that change what is learned (model, effective batch, data) are refused with
# exit 2 naming them, unless --fresh. A deadline too short for one step exits 4; a deadline reached
# mid-run exits 75 and says how to continue.
set -uo pipefail
py=${FRUGAL_PYTHON:-python3}
"$py" -c "import numpy, PIL" 2>/dev/null || { echo "skip: needs numpy + pillow in $py"; exit 77; }
command -v frugal-torch >/dev/null || { echo "skip: frugal-torch not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails+1)); fi; }

"$py" - "$t/data.zip" "$t/more.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for path, n in [(sys.argv[1], 40), (sys.argv[2], 50)]:
    with zipfile.ZipFile(path, "w") as z:
        for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
            for i in range(n):
                buf = io.BytesIO()
                Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(buf, "PNG")
                z.writestr(f"{cls}/{i:03d}.png", buf.getvalue())
PY
args=(--data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --workers 1 --device cpu --run "$t/run")
frugal train "${args[@]}" 2>"$t/log1"
check "first run finishes" '[ $? -eq 0 ]'

cp "$t/data.zip" "$t/moved.zip"
frugal train "${args[@]}" --workers 2 --deadline 1h --save-every 5steps --data "$t/moved.zip" 2>"$t/log2"
check "session options and a moved archive may change (exit 0)" '[ $? -eq 0 ]'
check "...and the log says it resumed" 'grep -q resuming "$t/log2"'

frugal train "${args[@]}" --model resnet18 2>"$t/log3"
rc=$?
check "another model is refused as a usage error (2)" '[ $rc -eq 2 ]'
check "...naming the option and --fresh" 'grep -q "model" "$t/log3" && grep -q -- "--fresh" "$t/log3"'

frugal train "${args[@]}" --accum 2 2>"$t/log4"
check "another effective batch is refused (2)" '[ $? -eq 2 ] && grep -q "effective batch" "$t/log4"'

frugal train "${args[@]}" --data "$t/more.zip" 2>"$t/log5"
check "other data (image count) is refused (2)" '[ $? -eq 2 ] && grep -q "train_images" "$t/log5"'

frugal train "${args[@]}" --model resnet18 --image-size 32 --epochs 1 --fresh 2>"$t/log6"
check "--fresh starts over with the new options" '[ $? -eq 0 ] && ! grep -q resuming "$t/log6"'

frugal train --data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --device cpu --run "$t/short" \
  --deadline 1s 2>"$t/log7"
check "a deadline too short for one step exits 4" '[ $? -eq 4 ]'
check "...and leaves no checkpoint" '[ -z "$(ls "$t/short" 2>/dev/null | grep ckpt-)" ]'

frugal train --data "$t/data.zip" --model cnn --epochs 500 --batch-size 8 --workers 1 --device cpu \
  --run "$t/long" --deadline 4s 2>"$t/log8"
check "a deadline reached mid-run exits 75" '[ $? -eq 75 ]'
check "...says how to continue" 'grep -qi "same command" "$t/log8"'
check "...and leaves a checkpoint to resume from" '[ -n "$(ls "$t/long" | grep ckpt-)" ]'

[ $fails -eq 0 ] || { for f in "$t"/log*; do echo "== $f"; tail -5 "$f"; done; echo "$fails failed"; exit 1; }
