#!/usr/bin/env bash
# The top-level CLI: help, version, unknown commands, exit codes, and which executable links what.
source "$(dirname "$0")/lib/common.sh"
keep_going
expect_exit help 0 frugal --help
grep -q "^  train " "$t/out" || bad "help lists train"
expect_exit version 0 frugal --version
grep -Eq "^frugal [0-9]+\.[0-9]+\.[0-9]+( \(built for torch [0-9]+\.[0-9]+[^)]*\))?$" "$t/out" || bad "version format"
expect_exit no-command 2 frugal
expect_exit unknown-command 2 frugal frobnicate
grep -q "unknown command 'frobnicate'" "$t/err" || bad "unknown command message"
expect_exit doctor 0 frugal doctor
expect_exit doctor-json 0 frugal doctor --json
"$py" - "$t/out" <<'PY' || bad "doctor-json keys"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("cpu", "ram", "disk", "libtorch", "driver", "gpus", "warnings"):
    assert k in d, k
assert d["libtorch"]["version"].startswith("2."), d["libtorch"]
print("ok   doctor-json keys")
PY
expect_exit doctor-bad-option 2 frugal doctor --no-such-option

# The torch-free executable must not load LibTorch; frugal-torch must not link the CUDA driver
# stub (libcuda.so comes from the driver at run time, never from the toolkit's stubs).
if readelf -d "$bin/frugal" | grep -q "libtorch"; then
  bad "frugal links LibTorch"; else ok "frugal is torch-free"; fi
if [ -x "$bin/frugal-torch" ]; then
  if readelf -d "$bin/frugal-torch" | grep -q "libcuda.so"; then
    bad "frugal-torch links libcuda.so"; else ok "no driver stub"; fi
fi
finish
