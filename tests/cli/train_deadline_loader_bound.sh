#!/usr/bin/env bash
# A training whose loader is the bottleneck stops on its deadline saved BEFORE it, counted from the
# command's start: one worker decoding 1000x1000 PNGs (a few ms each) for batches of 384 feeds the
# cnn at 32 px, which computes a step in a fraction of that, so most of a step is the wait for its
# batch. The deadline must count that wait as part of the step (issue 27): measured on the
# computation alone, the last step it allowed waited seconds for its batch, and the save on
# stopping ended after the deadline whenever that wait passed the margin left (with 5 s steps,
# about 3 runs of 4; the fake-clock StopPolicy test covers every phase).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

# 2 x 1500 gray PNGs of 1000x1000: 4 encodings per class (gradients, a few KB each) under many
# names, so the archive is small and quick to make while every image is decoded in full.
"$py" - "$t/data.zip" <<'PY'
import io, sys, zipfile
import numpy as np
from PIL import Image
side, per_class = 1000, 1500
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for c, name in enumerate(("rows", "cols")):
        blobs = []
        for v in range(4):
            a = np.linspace(0, 255, side, dtype=np.float32)
            img = np.tile(a, (side, 1)) if c else np.tile(a[:, None], (1, side))
            b = io.BytesIO()
            Image.fromarray(((img + 40 * v) % 256).astype(np.uint8), "L").save(b, "PNG")
            blobs.append(b.getvalue())
        for i in range(per_class):
            z.writestr(f"{name}/{i:05d}.png", blobs[i % 4])
PY

start=$(date +%s.%N)
rc=0
timeout 100 frugal train --data "$t/data.zip" --run "$t/run" --model cnn --image-size 32 --batch-size 384 \
  --workers 1 --epochs 5 --device cpu --deadline 40s 2>"$t/log" || rc=$?
end=$(date +%s.%N)
[[ $rc == 75 ]] || die "exit $rc, expected 75 (stopped resumable on the deadline)" "$t/log"
grep -q "stopped (deadline) at step [0-9]*, saved" "$t/log" || die "no saved stop on the deadline" "$t/log"

"$py" - "$t/run" "$start" "$end" "$t/log" <<'PY'
import glob, os, re, sys
run, start, end, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ckpts = sorted(glob.glob(f"{run}/ckpt-*.safetensors"), key=os.path.getmtime)
assert ckpts, "no checkpoint"
saved = os.path.getmtime(ckpts[-1]) - start
step = int(re.search(r"stopped \(deadline\) at step (\d+)", open(log).read()).group(1))
assert f"-s{step:06d}" in ckpts[-1], (ckpts[-1], step)
# The event the test is about happened: several steps of seconds each, most of it waiting for
# batches (the cnn computes 384 images of 32 px in well under a second on 2 cores).
speeds = [float(s) for s in re.findall(r"(\d+(?:\.\d+)?) img/s", open(log).read())]
assert step >= 2, f"only {step} steps: the data or the machine is too slow for this test"
# Waits past the deadline's fixed 1 s of margin are what the old accounting missed.
assert speeds and 384 / speeds[-1] >= 1.0, f"steps of {384 / speeds[-1]:.2f} s: the loader was not the bottleneck"
assert saved <= 40.0, f"the last checkpoint (step {step}) was saved {saved:.2f} s after the command started: after the 40 s deadline"
print(f"ok   saved step {step} at {saved:.1f} s of a 40 s deadline (steps of {384 / speeds[-1]:.1f} s; command ended at {end - start:.1f} s)")
PY
finish
