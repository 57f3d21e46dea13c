#!/usr/bin/env bash
# The top-level CLI: help, version, unknown commands, exit codes, and which executable links what.
set -u
fails=0
check() {  # check NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >/tmp/frugal_main_out.$$ 2>/tmp/frugal_main_err.$$
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; cat /tmp/frugal_main_err.$$; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
check help 0 frugal --help
grep -q "^  train " /tmp/frugal_main_out.$$ || { echo "FAIL help lists train"; fails=$((fails+1)); }
check version 0 frugal --version
grep -Eq "^frugal [0-9]+\.[0-9]+\.[0-9]+$" /tmp/frugal_main_out.$$ || { echo "FAIL version format"; fails=$((fails+1)); }
check no-command 2 frugal
check unknown-command 2 frugal frobnicate
grep -q "unknown command 'frobnicate'" /tmp/frugal_main_err.$$ || { echo "FAIL unknown command message"; fails=$((fails+1)); }
check doctor 0 frugal doctor
check doctor-json 0 frugal doctor --json
"$FRUGAL_PYTHON" - /tmp/frugal_main_out.$$ <<'PY' || fails=$((fails+1))
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("cpu", "ram", "disk", "libtorch", "driver", "gpus", "warnings"):
    assert k in d, k
assert d["libtorch"]["version"].startswith("2."), d["libtorch"]
print("ok   doctor-json keys")
PY
check doctor-bad-option 2 frugal doctor --no-such-option

# The torch-free executable must not load LibTorch; frugal-torch must not link the CUDA driver
# stub (libcuda.so comes from the driver at run time, never from the toolkit's stubs).
if readelf -d "$FRUGAL_BINARY_DIR/bin/frugal" | grep -q "libtorch"; then
  echo "FAIL frugal links LibTorch"; fails=$((fails+1)); else echo "ok   frugal is torch-free"; fi
if [ -x "$FRUGAL_BINARY_DIR/bin/frugal-torch" ]; then
  if readelf -d "$FRUGAL_BINARY_DIR/bin/frugal-torch" | grep -q "libcuda.so"; then
    echo "FAIL frugal-torch links libcuda.so"; fails=$((fails+1)); else echo "ok   no driver stub"; fi
fi
rm -f /tmp/frugal_main_out.$$ /tmp/frugal_main_err.$$
echo "main_basics: $fails failed"
[ $fails -eq 0 ]
