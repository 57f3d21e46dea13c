#!/usr/bin/env bash
# `--decode cpu|gpu|auto` on bench loader and train: on a machine that cannot decode on the GPU,
# gpu is a usage error (exit 2) naming what is missing and the fix, auto falls back to the CPU and
# says why, and a misspelt mode is refused; where a GPU with nvJPEG is present, gpu is used.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python PIL numpy
"$py" "$src/tests/gpu/make_photo_archive.py" "$t/photos.zip" || die "making photos"

# The choice from --json, the log line (stderr, quiet under --json) from a second run.
frugal bench loader "$t/photos.zip" --decode auto --seconds 0.5 --image-size 64 --batch-size 8 --json >"$t/auto.json"
rc=$?
decode=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["decode"])' "$t/auto.json" 2>/dev/null)
frugal bench loader "$t/photos.zip" --decode auto --seconds 0.5 --image-size 64 --batch-size 8 2>"$t/auto.err"
if [ $rc -eq 0 ] && [ -n "$decode" ] && grep -q "decode: $decode" "$t/auto.err"; then ok "auto runs and logs its choice ($decode)"
else bad "auto runs and logs its choice (rc $rc, decode '$decode')" "$t/auto.err"; fi

frugal bench loader "$t/photos.zip" --decode gpu --seconds 0.5 --image-size 64 --batch-size 8 --json >"$t/gpu.json" 2>"$t/gpu.err"
rc=$?
if [ "$decode" = "gpu" ]; then
  if [ $rc -eq 0 ] && grep -q '"decode": *"gpu"' "$t/gpu.json"; then ok "gpu decodes on this GPU machine"
  else bad "gpu decodes on this GPU machine (rc $rc)" "$t/gpu.err"; fi
else
  if [ $rc -eq 2 ] && grep -q -- "--decode gpu" "$t/gpu.err" && grep -q -- "--decode cpu" "$t/gpu.err" && [ ! -s "$t/gpu.json" ]
  then ok "gpu without a usable GPU: exit 2, names the problem and the fix"
  else bad "gpu without a usable GPU: exit 2 (rc $rc)" "$t/gpu.err"; fi
  if grep -q "decode: cpu (--decode auto:" "$t/auto.err"; then ok "auto says why it chose the CPU"
  else bad "auto says why it chose the CPU" "$t/auto.err"; fi

  frugal train --data "$t/photos.zip" --run "$t/run" --model cnn --epochs 1 --decode gpu >/dev/null 2>"$t/train.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q -- "--decode gpu" "$t/train.err" && [ ! -e "$t/run" ]; then ok "train --decode gpu: exit 2 before touching the run"
  else bad "train --decode gpu: exit 2 (rc $rc)" "$t/train.err"; fi
fi

# Everywhere: GPU decoding feeds a GPU trainer only.
frugal train --data "$t/photos.zip" --run "$t/run-cpu" --model cnn --epochs 1 --device cpu --decode gpu >/dev/null 2>"$t/cpu.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "decode gpu" "$t/cpu.err" && grep -q "device cpu" "$t/cpu.err" && [ ! -e "$t/run-cpu" ]; then ok "train --device cpu --decode gpu: exit 2 before touching the run"
else bad "train --device cpu --decode gpu: exit 2 (rc $rc)" "$t/cpu.err"; fi

frugal bench loader "$t/photos.zip" --decode cuda --seconds 0.5 >/dev/null 2>"$t/bad.err"
rc=$?
if [ $rc -eq 2 ]; then ok "a misspelt mode is a usage error"; else bad "a misspelt mode is a usage error (rc $rc)"; fi

finish
