#!/usr/bin/env bash
# Checkpoint save against Python's torch.save of the same tensors (model weights + AdamW state +
# RNG), in the same run; also the training stall of a background save against a synchronous one,
# and the size of delta checkpoints. Prints one JSON line per model.
# Env: FRUGAL_BIN (default build/bin), FRUGAL_PYTHON (default .venv/bin/python), TRIALS (5),
# MODELS ("cnn resnet18").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
py=${FRUGAL_PYTHON:-$here/../.venv/bin/python}
trials=${TRIALS:-5}
[[ -x $bin/checkpoint_bench ]] || { echo "checkpoint_bench not built in $bin" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in ${MODELS:-cnn resnet18}; do
  ours=$("$bin/checkpoint_bench" "$model" "$work/$model" "$trials")
  "$py" - "$work/$model/state.safetensors" "$work/$model/ref.pt" "$trials" "$ours" <<'PY'
import json, os, statistics, sys, time
import torch
from safetensors.torch import load_file
src, dst, trials, ours = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
state = load_file(src)
times = []
for _ in range(trials):
    t0 = time.perf_counter()
    with open(dst, "wb") as f:  # flushed and fsynced, as frugal's save is
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    times.append(time.perf_counter() - t0)
ref_s, ref_bytes = statistics.median(times), os.path.getsize(dst)
ours.update({"bench": "checkpoint", "torch_save_s": ref_s, "torch_save_bytes": ref_bytes,
             "save_time_ratio": ours["sync_save_s"] / ref_s, "size_ratio": ours["checkpoint_bytes"] / ref_bytes,
             "stall_ratio_background_vs_sync": ours["background_stall_s"] / ours["sync_save_s"]})
print(json.dumps(ours))
PY
done
