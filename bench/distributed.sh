#!/usr/bin/env bash
# Data-parallel training on the CPU (issue 18): the share of a training step spent in
# communication with 2 Gloo ranks (torchrun --nproc-per-node 2, one thread each), for `cnn` and
# `resnet18`, read from the run's metrics.jsonl (comm_seconds / step_seconds of the last epoch:
# the gradient all-reduce, the per-step agreement, and the wait for the slower rank; and the
# gradient all-reduce's own share: what overlapping it with backward could save at most). Beside it,
# in the same run, one process of the same global batch on both cores: the 2-rank throughput over
# it (the ratio). Data: IMAGES of Fashion-MNIST's training images, evenly spread over the set (so
# every class), resized to 64 for resnet18.
# Prints one JSON line per model. Env: FRUGAL_BIN (default build/bin), IMAGES (4096), EPOCHS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
images=${IMAGES:-4096} epochs=${EPOCHS:-2}
idx=/usr/share/datasets/fashion-mnist
venv=$here/../.venv/bin
py=${FRUGAL_PYTHON:-$venv/python}
torchrun=$venv/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) || { echo "bench/distributed.sh: torchrun not found" >&2; exit 1; }
[[ -x $bin/frugal ]] || { echo "bench/distributed.sh: $bin/frugal not built" >&2; exit 1; }
[[ -f $idx/train-images-idx3-ubyte.gz ]] || { echo "bench/distributed.sh: $idx missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-dist.XXXXXX"); trap 'rm -rf "$w"' EXIT
"$bin/frugal" pack "$idx/train-images-idx3-ubyte.gz" -o "$w/full.zip" >/dev/null 2>"$w/pack.log" \
  || { cat "$w/pack.log" >&2; exit 1; }
"$py" - "$w/full.zip" "$w/all.zip" "$images" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:
    infos = [i for i in src.infolist() if not i.is_dir()]
    for info in infos[:: max(1, len(infos) // int(sys.argv[3]))][: int(sys.argv[3])]:  # every class
        dst.writestr(info, src.read(info))
PY
export PATH=$(dirname "$torchrun"):$bin:$PATH
for model in cnn resnet18; do
  size=28
  [[ $model == resnet18 ]] && size=64
  common=(--data "$w/all.zip" --val-split 0.1 --model "$model" --image-size "$size" --epochs "$epochs" --device cpu --amp off
          --workers 1 --seed 1)
  OMP_NUM_THREADS=1 "$torchrun" --standalone --nproc-per-node 2 --no-python -- \
    "$bin/frugal-torch" train "${common[@]}" --batch-size 32 --run "$w/$model-2" >/dev/null 2>"$w/$model-2.log" \
    || { tail -20 "$w/$model-2.log" >&2; exit 1; }
  "$bin/frugal" train "${common[@]}" --batch-size 64 --run "$w/$model-1" >/dev/null 2>"$w/$model-1.log" \
    || { tail -20 "$w/$model-1.log" >&2; exit 1; }
  "$py" - "$model" "$w/$model-2/metrics.jsonl" "$w/$model-1/metrics.jsonl" <<'PY'
import json, sys
model, two, one = sys.argv[1:]
last = lambda f: [json.loads(l) for l in open(f) if '"val_accuracy"' in l][-1]
a, b = last(two), last(one)
print(json.dumps({"bench": "distributed", "model": model, "ranks": a["world_size"],
                  "comm_share": round(a["comm_seconds"] / a["step_seconds"], 4),
                  "comm_seconds": round(a["comm_seconds"], 2), "step_seconds": round(a["step_seconds"], 2),
                  "gradient_all_reduce_share": round(a["gradient_comm_seconds"] / a["step_seconds"], 4),
                  "images_per_s_2_ranks": round(a["images_per_s"]), "images_per_s_1_process": round(b["images_per_s"]),
                  "ratio_2_ranks_over_1": round(a["images_per_s"] / b["images_per_s"], 3),
                  "val_accuracy_2_ranks": a["val_accuracy"], "val_accuracy_1_process": b["val_accuracy"]}))
PY
done
