#!/usr/bin/env bash
# `--decode cpu|gpu|auto` on bench loader and train: on a machine that cannot decode on the GPU,
# gpu is a usage error (exit 2) naming what is missing and the fix, auto falls back to the CPU and
# says why, and a misspelt mode is refused; where a GPU with nvJPEG is present, gpu is used.
set -u
PY=${FRUGAL_PYTHON:-python3}
"$PY" -c "import PIL, numpy" 2>/dev/null || { echo "skip: no Python with PIL"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails+1)); }
"$PY" "$FRUGAL_SOURCE_DIR/tests/gpu/make_photo_archive.py" "$T/photos.zip" || { echo "FAIL making photos"; exit 1; }

# The choice from --json, the log line (stderr, quiet under --json) from a second run.
frugal bench loader "$T/photos.zip" --decode auto --seconds 0.5 --image-size 64 --batch-size 8 --json >"$T/auto.json"
rc=$?
decode=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["decode"])' "$T/auto.json" 2>/dev/null)
frugal bench loader "$T/photos.zip" --decode auto --seconds 0.5 --image-size 64 --batch-size 8 2>"$T/auto.err"
if [ $rc -eq 0 ] && [ -n "$decode" ] && grep -q "decode: $decode" "$T/auto.err"; then ok "auto runs and logs its choice ($decode)"
else bad "auto runs and logs its choice (rc $rc, decode '$decode')"; cat "$T/auto.err"; fi

frugal bench loader "$T/photos.zip" --decode gpu --seconds 0.5 --image-size 64 --batch-size 8 --json >"$T/gpu.json" 2>"$T/gpu.err"
rc=$?
if [ "$decode" = "gpu" ]; then
  if [ $rc -eq 0 ] && grep -q '"decode": *"gpu"' "$T/gpu.json"; then ok "gpu decodes on this GPU machine"
  else bad "gpu decodes on this GPU machine (rc $rc)"; cat "$T/gpu.err"; fi
else
  if [ $rc -eq 2 ] && grep -q -- "--decode gpu" "$T/gpu.err" && grep -q -- "--decode cpu" "$T/gpu.err" && [ ! -s "$T/gpu.json" ]
  then ok "gpu without a usable GPU: exit 2, names the problem and the fix"
  else bad "gpu without a usable GPU: exit 2 (rc $rc)"; cat "$T/gpu.err"; fi
  if grep -q "decode: cpu (--decode auto:" "$T/auto.err"; then ok "auto says why it chose the CPU"
  else bad "auto says why it chose the CPU"; cat "$T/auto.err"; fi

  frugal train --data "$T/photos.zip" --run "$T/run" --model cnn --epochs 1 --decode gpu >/dev/null 2>"$T/train.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q -- "--decode gpu" "$T/train.err" && [ ! -e "$T/run" ]; then ok "train --decode gpu: exit 2 before touching the run"
  else bad "train --decode gpu: exit 2 (rc $rc)"; cat "$T/train.err"; fi
fi

# Everywhere: GPU decoding feeds a GPU trainer only.
frugal train --data "$T/photos.zip" --run "$T/run-cpu" --model cnn --epochs 1 --device cpu --decode gpu >/dev/null 2>"$T/cpu.err"
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--device cpu" "$T/cpu.err" && [ ! -e "$T/run-cpu" ]; then ok "train --device cpu --decode gpu: exit 2 before touching the run"
else bad "train --device cpu --decode gpu: exit 2 (rc $rc)"; cat "$T/cpu.err"; fi

frugal bench loader "$T/photos.zip" --decode cuda --seconds 0.5 >/dev/null 2>"$T/bad.err"
rc=$?
if [ $rc -eq 2 ]; then ok "a misspelt mode is a usage error"; else bad "a misspelt mode is a usage error (rc $rc)"; fi

[ $fails -eq 0 ]
