#!/usr/bin/env bash
# Pipeline stages on the CPU (issue 31): resnet18 at 224 px cut into 2 stages on 2 Gloo ranks
# (torchrun --nproc-per-node 2, one thread each), M micro-batches a step, against one process of
# the same work in the same run (--batch-size B/M --accum M: the same samples, micro-batches and
# updates; both cores). Read from the runs' metrics.jsonl (the last epoch):
# Two cuts: balanced by measured time (the default) and by parameters (--pipeline-balance).
# - step_seconds_ratio: the pipeline's time per step over one process's (above 1: slower);
# - idle_fraction per stage: the share of its schedule spent waiting in receives (the bubble plus
#   the transfers), beside the schedule's own bubble (N-1)/(M+N-1) for equal stages;
# - per-rank parameter and optimizer-state bytes, and their share of the whole model's (~1/N);
# - send_share: waiting for sends to finish, over the schedule.
# Data: IMAGES Fashion-MNIST training images (every class), 224 px. Prints one JSON line.
# Env: FRUGAL_BIN (default build/bin), IMAGES (128), BATCH (16), MICRO (4), EPOCHS (1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
images=${IMAGES:-128} batch=${BATCH:-16} micro=${MICRO:-4} epochs=${EPOCHS:-1}
idx=/usr/share/datasets/fashion-mnist
venv=$here/../.venv/bin
py=${FRUGAL_PYTHON:-$venv/python}
torchrun=$venv/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) || { echo "bench/pipeline.sh: torchrun not found" >&2; exit 1; }
[[ -x $bin/frugal ]] || { echo "bench/pipeline.sh: $bin/frugal not built" >&2; exit 1; }
[[ -f $idx/train-images-idx3-ubyte.gz ]] || { echo "bench/pipeline.sh: $idx missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-pipeline.XXXXXX"); trap 'rm -rf "$w"' EXIT
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
common=(--data "$w/all.zip" --val-split 0.1 --model resnet18 --image-size 224 --epochs "$epochs" --device cpu
        --amp off --workers 1 --seed 1)
for balance in time parameters; do
  OMP_NUM_THREADS=1 "$torchrun" --standalone --nproc-per-node 2 --no-python -- \
    "$bin/frugal-torch" train "${common[@]}" --batch-size "$batch" --pipeline 2 --micro-batches "$micro" \
    --pipeline-balance $balance --run "$w/pipe-$balance" >/dev/null 2>"$w/pipe-$balance.log" \
    || { tail -20 "$w/pipe-$balance.log" >&2; exit 1; }
done
# One process of the same samples, micro-batches and updates. FRUGAL_FORCE_GROUP=1 makes it a
# group of one, so that it records step_seconds as the pipeline does.
RANK=0 WORLD_SIZE=1 FRUGAL_FORCE_GROUP=1 MASTER_ADDR=127.0.0.1 \
  MASTER_PORT=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
  "$bin/frugal-torch" train "${common[@]}" --batch-size $((batch / micro)) --accum "$micro" --run "$w/one" \
  >/dev/null 2>"$w/one.log" || { tail -20 "$w/one.log" >&2; exit 1; }
"$py" - "$w/one/metrics.jsonl" "$w/one" "$w/pipe-time/metrics.jsonl" "$w/pipe-parameters/metrics.jsonl" <<'PY'
import glob, json, sys
from safetensors import safe_open
one, one_run = sys.argv[1:3]
records = lambda f: [json.loads(l) for l in open(f) if '"val_accuracy"' in l]
last = lambda f: records(f)[-1]
steps = lambda f: records(f)[-1]["step"] - (records(f)[-2]["step"] if len(records(f)) > 1 else 0)  # the last epoch's
b = last(one)
# The whole model's parameter and optimizer-state bytes, from one process's checkpoint.
ck = sorted(glob.glob(one_run + "/ckpt-*.safetensors"))[-1]
whole_params = whole_optim = 0
with safe_open(ck, "pt") as f:
    for k in f.keys():
        t = f.get_tensor(k)
        if k.startswith("frugal.optim.") and t.numel() > 1:
            whole_optim += t.numel() * t.element_size()
        elif not k.startswith("frugal.") and t.is_floating_point() and "running_" not in k:
            whole_params += t.numel() * t.element_size()
cuts = {}
for balance, pipe in zip(("time", "parameters"), sys.argv[3:]):
    a = last(pipe)
    p = a["pipeline"]
    ranks = [{"stage": r["stage"], "idle_fraction": round(r["idle_fraction"], 3),
              "send_share": round(r["send_wait_seconds"] / r["schedule_seconds"], 4) if r["schedule_seconds"] else 0,
              "parameter_bytes": r["parameter_bytes"], "parameter_share": round(r["parameter_bytes"] / whole_params, 3),
              "optimizer_state_bytes": r["optimizer_state_bytes"],
              "optimizer_state_share": round(r["optimizer_state_bytes"] / whole_optim, 3) if whole_optim else None}
             for r in p["ranks"]]
    cuts[balance] = {"mean_idle_fraction": round(sum(r["idle_fraction"] for r in p["ranks"]) / len(p["ranks"]), 3),
                     "step_seconds": round(a["step_seconds"] / steps(pipe), 3),
                     "step_seconds_ratio": round(a["step_seconds"] / b["step_seconds"], 3),
                     "images_per_s": round(a["images_per_s"], 2), "ranks": ranks}
print(json.dumps({"bench": "pipeline", "model": "resnet18", "image_size": 224, "stages": p["stages"],
                  "micro_batches": p["micro_batches"], "schedule_bubble": round(p["schedule_bubble"], 3),
                  "step_seconds_one_process": round(b["step_seconds"] / steps(one), 3),
                  "images_per_s_one_process": round(b["images_per_s"], 2),
                  "whole_parameter_bytes": whole_params, "whole_optimizer_state_bytes": whole_optim,
                  "balanced_by": cuts}))
PY
