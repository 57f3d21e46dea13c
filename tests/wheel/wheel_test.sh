#!/usr/bin/env bash
# The wheel (issue 43): `make wheel`'s wheel installed into a fresh virtual environment that has only
# torch, torchvision and numpy (linked from .venv: tests/wheel/fresh_venv.py), and from there, in a
# clean folder with nothing of the checkout on PATH or PYTHONPATH: `frugal doctor`, a short
# `frugal train` and `frugal eval`, and the README's Python loop as written (its edit-me lines
# replaced). The wheel's platform tag must be manylinux_2_35 or older (notebooks run glibc 2.35).
# Run by scripts/test.sh after ctest (it builds in the build folder: nothing else may run from it
# meanwhile). Usage: tests/wheel/wheel_test.sh BUILD_DIR [WHEEL] (WHEEL: test this one, build none).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: wheel_test.sh BUILD_DIR [WHEEL]}
PY=$ROOT/.venv/bin/python
t=$(mktemp -d "${TMPDIR:-/tmp}/frugal-wheel-test-XXXXXX")
trap 'rm -rf "$t"' EXIT
failed=0
ok() { echo "wheel_test: ok   $*"; }
bad() { echo "wheel_test: FAIL $*"; failed=$((failed + 1)); }

wheel=${2:-}
if [[ -z $wheel ]]; then
  wheel=$("$ROOT/scripts/make_wheel.sh" "$BUILD" 2>"$t/make_wheel.log" | tail -1) ||
    { tail -30 "$t/make_wheel.log"; echo "wheel_test: FAIL make_wheel.sh"; exit 1; }
  wheel=$ROOT/$wheel
fi
[[ -f $wheel ]] || { echo "wheel_test: FAIL no wheel at $wheel"; exit 1; }
echo "wheel_test: $wheel ($(du -m "$wheel" | cut -f1) MB)"

tag=$("$PY" -m auditwheel show "$wheel" 2>&1 | tr '\n' ' ' | grep -o 'manylinux_2_[0-9]*_x86_64' | head -1)
minor=${tag#manylinux_2_}; minor=${minor%%_*}
[[ -n $tag && $minor -le 35 ]] && ok "auditwheel show: $tag (at most manylinux_2_35)" || bad "auditwheel show: '$tag'"
"$PY" - "$wheel" <<'PY' && ok "torch and its libraries are not inside" || bad "the wheel bundles torch's libraries"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
sys.exit(1 if any("libtorch" in n or "libc10" in n for n in names) else 0)
PY

"$PY" "$ROOT/tests/wheel/fresh_venv.py" "$t/venv" torch torchvision numpy > "$t/venv.log" 2>&1 ||
  { cat "$t/venv.log"; echo "wheel_test: FAIL fresh venv"; exit 1; }
start=$(date +%s.%N)
if "$t/venv/bin/python" -m pip install -q --no-index "$wheel" > "$t/pip.log" 2>&1; then
  ok "pip install into a venv of torch, torchvision and numpy only: $("$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)") s"
else
  cat "$t/pip.log"; bad "pip install"
fi

# A clean folder and environment: nothing of the checkout's build on PATH or PYTHONPATH.
mkdir "$t/work" && cd "$t/work"
export PATH=$t/venv/bin:/usr/bin:/bin
unset PYTHONPATH FRUGAL_PARQUET_PLUGIN
"$PY" - <<'PY'
import io, random, zipfile
from PIL import Image
random.seed(3)
with zipfile.ZipFile("two.zip", "w") as z:
    for k, (lo, hi) in enumerate(((150, 255), (0, 100))):
        for i in range(24):
            img = Image.new("RGB", (16, 16))  # RGB: the README's loop trains a torchvision resnet18
            img.putdata([tuple(random.randint(lo, hi) for _ in range(3)) for _ in range(256)])
            b = io.BytesIO(); img.save(b, "PNG"); z.writestr(f"c{k}/{i}.png", b.getvalue())
PY
[[ $(command -v frugal) == "$t/venv/bin/frugal" ]] && ok "frugal on PATH is the wheel's" || bad "frugal is $(command -v frugal)"
frugal doctor > doctor.txt 2>&1 && grep -q "LibTorch  2" doctor.txt && ok "frugal doctor" ||
  { cat doctor.txt; bad "frugal doctor"; }
frugal train --data two.zip --model cnn --epochs 2 --batch-size 8 --device cpu --run r > train.txt 2>&1 &&
  ok "frugal train" || { tail -20 train.txt; bad "frugal train"; }
frugal eval r --data two.zip --json > eval.json 2> eval.err &&
  "$t/venv/bin/python" -c "import json; d = json.load(open('eval.json')); assert 0 <= d['accuracy'] <= 1" &&
  ok "frugal eval --json" || { cat eval.err; bad "frugal eval"; }

# The README's loop, as written, with the wheel's package (its edit-me lines: this data, 1 epoch).
"$PY" - "$ROOT/README.md" <<'PY' > loop.py
import re, sys
text = open(sys.argv[1]).read()
code = re.search(r"<!-- python-guide: loop -->\n```python\n(.*?)```\n<!-- python-guide: end -->", text, re.S).group(1)
marker = "# (edit the lines above; the rest stays as it is)"
head, rest = code.split(marker + "\n")
lines = [l for l in head.splitlines() if not re.match(r"^[A-Z][A-Z, ]* = ", l)]
print("\n".join(lines + ['DATA = "two.zip"', 'RUN = "runs/mine"', 'EPOCHS, SIZE, DEADLINE = 1, 32, "1h"']))
print(marker + "\n" + rest)
PY
"$t/venv/bin/python" loop.py > loop.txt 2>&1 && ls runs/mine | grep -q "^ckpt-" &&
  "$t/venv/bin/python" -c "import frugal, os, sys; sys.exit(0 if frugal.__file__.startswith('$t/venv') else 1)" &&
  ok "the README's Python loop, with the wheel's frugal" || { tail -20 loop.txt; bad "the README's Python loop"; }

echo "wheel_test: $failed failed"
exit $((failed > 0))
