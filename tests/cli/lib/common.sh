# Shared preamble and helpers of the CLI tests. Every tests/cli/*.sh is one ctest test (cli.<name>,
# run with the built executables on PATH); this file is in lib/ so that it is not taken for one.
# Name a new test by area, as the libraries and commands are named: archive_read_*, train_*, ...
#
# Use it as the first lines of a test:
#
#   #!/usr/bin/env bash
#   # What the test shows, in a few lines.
#   source "$(dirname "$0")/lib/common.sh"
#   needs_python numpy PIL                      # skip (exit 77) unless $py imports them
#   needs_commands frugal frugal-torch          # skip unless on PATH (built, installed)
#   make_two_class_zip "$t/data.zip" 16         # 2 x 16 learnable 28x28 PNGs (see below)
#   make_shapes_zip "$t/shapes.zip" 60          # 3 x 60 28x28 PNGs: circles, squares, lines
#   expect_exit "verify refuses a bad CRC" 3 frugal verify "$t/bad.zip"   # stdout $t/out, stderr $t/err
#   expect_msg "...naming the entry" "BAD  c:"  # a fixed string in $t/err (or in the file given third)
#   check "the join equals the original" '[ "$(sum a)" == "$(sum b)" ]'  # any condition, eval'd
#   some_command || die "what went wrong" "$t/log"   # FAIL, the log's tail, exit 1
#   newest_step "$t/run"; same_weights RUN_A RUN_B   # checkpoints: the newest step; bitwise equal
#   finish                                      # last line: exit 1 if a check failed
#
# What it sets: `set -euo pipefail`; $t, a fresh folder removed at exit (KEEP=1 keeps it and says
# where; `on_exit CMD` runs CMD before that, e.g. to kill a child); $py, the Python with the
# independent reference implementations (FRUGAL_PYTHON, else python3); $src, the checkout;
# $bin, the folder of the built executables.
#
# Failing: with set -e (the default) the first failed check ends the test with exit 1. A test that
# checks many independent things and should report all of them calls `keep_going` right after
# sourcing: errexit and pipefail are off (a command may fail and its $? be checked, as in
# `frugal join ...; check "exit 3" '[ $? -eq 3 ]'`), failed checks are counted, and `finish`
# exits 1 when there was one.
# Exit 77 is a skip (ctest SKIP_RETURN_CODE).

set -euo pipefail
src=${FRUGAL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
bin=${FRUGAL_BINARY_DIR:-$src/build}/bin
py=${FRUGAL_PYTHON:-python3}
test_name=$(basename "$0" .sh)
t=$(mktemp -d "${TMPDIR:-/tmp}/frugal-$test_name.XXXXXX")
fails=0
last_rc=0
_on_exit=()

on_exit() { _on_exit+=("$1"); }  # on_exit COMMAND: run at exit, before $t is removed
_common_exit() {
  local h
  for h in "${_on_exit[@]}"; do eval "$h" || true; done
  if [[ -n ${KEEP:-} ]]; then echo "kept $t" >&2; else rm -rf "$t"; fi
}
trap _common_exit EXIT

keep_going() { set +e +o pipefail; }

skip() { echo "skip: $*"; exit 77; }
needs_python() {  # needs_python MODULE...: skip unless $py imports every MODULE
  local m
  for m in "$@"; do "$py" -c "import $m" 2>/dev/null || skip "$py lacks $m"; done
}
needs_commands() {  # needs_commands NAME...: skip unless each is on PATH
  local c
  for c in "$@"; do command -v "$c" >/dev/null || skip "$c not found (not built, or not installed)"; done
}

ok() { echo "ok   $*"; }
_show() {  # _show FILE...: the tails of the files that say why something failed
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    echo "  --- $f"
    tail -n 40 "$f" | sed 's/^/  | /'
  done
}
bad() {  # bad NAME [FILE...]: a failed check; ends the test unless keep_going
  local name=$1
  shift
  echo "FAIL $name"
  _show "$@"
  fails=$((fails + 1))
  if [[ $- == *e* ]]; then exit 1; fi
  return 0
}
die() {  # die WHY [FILE...]: a failure after which nothing else is worth checking
  local why=$1
  shift
  echo "FAIL $why"
  _show "$@"
  exit 1
}
check() {  # check NAME CONDITION: CONDITION is eval'd, so it still sees the $? of the command before
  if eval "$2"; then ok "$1"; else bad "$1"; fi
}
expect_exit() {  # expect_exit NAME WANT CMD...: run CMD, stdout in $t/out, stderr in $t/err
  local name=$1 want=$2 rc=0
  shift 2
  "$@" >"$t/out" 2>"$t/err" || rc=$?
  last_rc=$rc
  if [[ $rc == "$want" ]]; then ok "$name"; else bad "$name: exit $rc, expected $want" "$t/err"; fi
}
expect_msg() {  # expect_msg NAME TEXT [FILE]: TEXT (a fixed string) is in FILE ($t/err)
  local file=${3:-$t/err}
  if grep -qF -- "$2" "$file"; then ok "$1"; else bad "$1: '$2' not in $(basename "$file")" "$file"; fi
}
expect_no_msg() {  # expect_no_msg NAME TEXT [FILE]: TEXT is not in FILE ($t/err)
  local file=${3:-$t/err}
  if grep -qF -- "$2" "$file"; then bad "$1: '$2' in $(basename "$file")" "$file"; else ok "$1"; fi
}
expect_json() {  # expect_json NAME PYTHON_CONDITION [FILE]: the condition on d, FILE's JSON ($t/out)
  local file=${3:-$t/out}
  if "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$file"; then
    ok "$1"
  else
    bad "$1" "$file"
  fi
}
finish() {  # the last line of a test
  if ((fails)); then
    echo "$test_name: $fails failed"
    exit 1
  fi
  echo "$test_name: all passed"
}

# make_two_class_zip ZIP PER_CLASS [png|npy] [SEED]: classes "bright" (pixels 160..254) and "dark"
# (0..95), PER_CLASS 28x28 grayscale samples each (bright/000.png ...), drawn from numpy's
# default_rng(SEED, default 0): learnable in a few steps. Stored, as images are packed. PNGs need
# numpy and PIL, .npy samples numpy. The same arguments give the same bytes.
# make_shapes_zip ZIP N [SEED]: 3 classes (class0 circles, class1 squares, class2 lines) of N
# 28x28 PNGs each, drawn at random offsets from SEED (default 0); needs PIL.
make_shapes_zip() {
  "$py" - "$1" "$2" "${3:-0}" <<'PY'
import io, random, sys, zipfile
from PIL import Image, ImageDraw
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
with zipfile.ZipFile(path, "w") as z:
    for label in range(3):
        for i in range(n):
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
}
make_two_class_zip() {
  "$py" - "$1" "$2" "${3:-png}" "${4:-0}" <<'PY'
import io, sys, zipfile
import numpy as np
path, n, kind, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(seed)
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    for cls, lo, hi in [("bright", 160, 255), ("dark", 0, 96)]:
        for i in range(n):
            pixels = rng.integers(lo, hi, (28, 28), dtype=np.uint8)
            buf = io.BytesIO()
            if kind == "npy":
                np.save(buf, pixels)
            else:
                from PIL import Image
                Image.fromarray(pixels).save(buf, "PNG")
            z.writestr(f"{cls}/{i:03d}.{kind}", buf.getvalue())
PY
}
# newest_step RUN: the highest step among RUN's committed checkpoints (0 when none).
newest_step() {
  local n=0 f s
  for f in "$1"/ckpt-*.safetensors; do
    [[ -e $f ]] || continue
    s=${f##*-s}; s=${s%%.*}; s=$((10#$s))
    ((s > n)) && n=$s
  done
  echo $n
}
# same_weights RUN_A RUN_B: exit 0 when their best.safetensors hold the same tensors bit for bit.
same_weights() {
  "$py" - "$1" "$2" <<'PY'
import sys
from safetensors.torch import load_file
a, b = (load_file(f"{r}/best.safetensors") for r in sys.argv[1:])
assert set(a) == set(b) and all(bool((a[k] == b[k]).all()) for k in a), [k for k in a if not bool((a[k] == b[k]).all())]
PY
}
