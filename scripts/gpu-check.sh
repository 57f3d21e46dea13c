#!/usr/bin/env bash
# Runs THERE, on the lent GPU machine (torch 2.11+cu130, nvcc and CMake present; no apt, no
# network), after scripts/gpu-prepare.sh filled .gpu-carry/ here. One call, one machine start,
# under 10 minutes, everything under $OUT: gpu-results.json (a verdict per requirement), the log,
# probe.txt, test_gpu.json. Each phase runs under its own cap (and what is left of the total).
#
# The binaries: a LibTorch build takes longer than the check can spare (the precompiled header
# alone ~120 s on these machines), so gpu-prepare.sh carries frugal-torch, test_gpu and
# gpu_train_step built HERE against the same torch 2.11+cu130 wheel (with sm_75/80/86/90 kernels),
# stripped, in .gpu-carry/bin. They run THERE on that machine's torch (LD_LIBRARY_PATH) and the
# carried Debian libraries. Only when they are absent or do not start is frugal built there, test_gpu
# first, under GPU_CHECK_BUILD_CAP.
#
# What must hold (each a "requirements" entry, true/false, in gpu-results.json):
#   test_gpu          the CUDA tests pass (GpuLoader, kernels, fp16 grad-checkpoint, sync-free normalize)
#   nvjpeg_hybrid     the loader runs on nvJPEG's GPU_HYBRID backend (the T4 path), forced once
#   deadline_cut      a train run (--decode gpu --amp fp16) cut by --deadline exits 75
#   resume_finishes   the same command again resumes and exits 0
#   finite_losses     every metrics.jsonl line of those runs has finite losses
#   grad_checkpoint   cnn --amp fp16 --deterministic: --grad-checkpoint's losses equal plain ones
#   resume_exact      efficientnet_b0 stopped (SIGTERM, saved) and resumed ends bitwise where an
#                     uninterrupted run ends (weights and optimizer state)
#   python_cuda       tests/python/test_cuda.py with the carried Python module (.gpu-carry/python):
#                     frugal.Loader(device="cuda") batches equal the CPU's, the CUDA generator's
#                     state comes back with a Checkpointer, an fp16 loop with a GradScaler resumes
#                     bitwise (needs that machine's Python to be the one the module was built for;
#                     else the phase says so and fails)
#   pipeline_shared_gpu  2 pipeline stages on this GPU over Gloo (fp16, deterministic) train bitwise
#                     what one process does with --accum 2 (issue 31; NCCL takes one rank per GPU)
# Figures besides: nccl_overhead (resnet18, one rank of an NCCL group against no group: <= 3%).
# The train phases force --amp fp16: an H200 would pick bf16 and never run the loss scaler.
#
#   scripts/gpu-check.sh            the whole check
#   scripts/gpu-check.sh --probe    only the probe (OS, glibc, GPU, nvJPEG, compilers; 60 s cap)
#   scripts/gpu-check.sh --no-gpu   unpack + binaries (carried or built), no GPU phases
#                                   (what can be checked on a machine without one)
# Env: OUT (default out/gpu-check), GPU_CHECK_BUDGET (seconds, default 540), GPU_CHECK_ONLY (the
#      phases to run, e.g. "resume_exact nccl_overhead"; default all), GPU_CHECK_TARGETS,
#      GPU_CHECK_BUILD_CAP (default 330), GPU_CHECK_JOBS (default: all cores), GPU_CHECK_PYTHON
#      (default python3), PHOTOS (default 1000).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
OUT=${OUT:-$root/out/gpu-check}
mkdir -p "$OUT"
carry=$root/.gpu-carry
prefix=${GPU_CHECK_PREFIX:-/tmp/frugal-prefix}
build=${GPU_CHECK_BUILD:-/tmp/frugal-gpucheck-build}
budget=${GPU_CHECK_BUDGET:-540}
build_cap=${GPU_CHECK_BUILD_CAP:-330}
jobs=${GPU_CHECK_JOBS:-$(nproc)}
targets=${GPU_CHECK_TARGETS:-test_gpu frugal-torch gpu_train_step}
bindir=$carry/bin  # or $build/bin after a build here
runs=/tmp/frugal-gpu-runs
photos=${PHOTOS:-1000}
python=${GPU_CHECK_PYTHON:-python3}  # the one that holds torch
t0=$(date +%s)
log=$OUT/gpu-check.log
phases=$OUT/.phases.jsonl
: > "$log"
: > "$phases"
say() { echo "gpu-check: $*" | tee -a "$log" >&2; }

# phase NAME CAP CMD...: CMD under `timeout`, capped by what the total budget has left; its last
# 150 lines go to the log and {"phase", "rc", "seconds"} to the results.
phase() {
  local name=$1 cap=$2
  shift 2
  if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ " probe unpack binaries configure build photos $GPU_CHECK_ONLY " != *" $name "* ]]; then
    echo "{\"phase\": \"$name\", \"rc\": null, \"skipped\": \"not in GPU_CHECK_ONLY\"}" >> "$phases"
    return 0
  fi
  local left=$((budget - ($(date +%s) - t0)))
  ((cap > left)) && cap=$left
  if ((cap < 5)); then
    echo "{\"phase\": \"$name\", \"rc\": null, \"skipped\": \"budget spent\"}" >> "$phases"
    say "$name: skipped, budget spent"
    return 124
  fi
  local t=$(date +%s) rc
  timeout -k 5 "$cap" bash -c '"$@"' _ "$@" > "/tmp/gpu-check-$name.log" 2>&1
  rc=$?
  { echo "===== $name (rc $rc, cap $cap s)"; tail -n 150 "/tmp/gpu-check-$name.log"; } >> "$log"
  echo "{\"phase\": \"$name\", \"rc\": $rc, \"seconds\": $(($(date +%s) - t)), \"cap\": $cap}" >> "$phases"
  say "$name: rc $rc in $(($(date +%s) - t)) s (cap $cap)"
  return $rc
}

probe() {
  echo "## os"; uname -a; cat /etc/os-release 2>/dev/null | head -4; ldd --version 2>&1 | head -1
  echo "## machine"; nproc; free -g | head -2; df -h /tmp | tail -1
  echo "## gpu"; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -3
  echo "## tools"; for t in nvcc gcc g++ cmake ninja pkg-config dpkg taskset "$python"; do printf '%s: ' $t; command -v $t || echo missing; done
  nvcc --version 2>&1 | tail -2; gcc --version 2>&1 | head -1; cmake --version 2>&1 | head -1
  echo "## torch"
  "$python" -c 'import torch, torchvision; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "vision", torchvision.__version__); print(torch.utils.cmake_prefix_path)' 2>&1 | tail -2
  echo "## nvjpeg"
  ldconfig -p 2>/dev/null | grep -E 'nvjpeg|turbojpeg|spng|deflate|zstd|xxhash|libcrypto' || true
  ls /usr/local/cuda/lib64/ 2>/dev/null | grep -i nvjpeg || echo "no nvjpeg in /usr/local/cuda/lib64"
  ls /usr/local/cuda/include/nvjpeg.h 2>/dev/null || echo "no nvjpeg.h in /usr/local/cuda/include"
  timeout 15 find / -xdev \( -name 'libnvjpeg*' -o -name nvjpeg.h \) 2>/dev/null | head -10
  echo "## carried"; ls "$carry/debs" 2>/dev/null | wc -l; ls "$carry/nvjpeg/lib" 2>/dev/null
}

# dpkg -x into $prefix (never /), .pc files pointed at it, and pkg-config from the carried pkgconf
# when the machine has none.
unpack() {
  rm -rf "$prefix" && mkdir -p "$prefix"
  for f in "$carry"/debs/*.deb; do
    if command -v dpkg >/dev/null; then dpkg -x "$f" "$prefix" || return 1
    else (cd "$prefix" && ar p "$f" data.tar.xz | tar -xJ) || return 1; fi
  done
  find "$prefix" -name '*.pc' -exec sed -i "s#=/usr#=$prefix/usr#g; s# /usr/# $prefix/usr/#g" {} +
  mkdir -p "$prefix/bin"
  if ! command -v pkg-config >/dev/null; then
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/usr/lib/x86_64-linux-gnu exec %s/usr/bin/pkgconf "$@"\n' "$prefix" "$prefix" > "$prefix/bin/pkg-config"
    chmod +x "$prefix/bin/pkg-config"
  fi
  du -sh "$prefix"
}

configure() {
  local py
  py=$(command -v "$python")
  PATH=$prefix/bin:$PATH PKG_CONFIG_PATH=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig \
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix/usr" \
    -DFRUGAL_PYTHON="$py" -DFRUGAL_NVJPEG_ROOT="$carry/nvjpeg" -DFRUGAL_CUDA_ARCHITECTURES="${GPU_CHECK_ARCH:-90}" \
    -DTORCH_CUDA_ARCH_LIST="${GPU_CHECK_TORCH_ARCH:-9.0}" -DFRUGAL_FUZZ=OFF \
    -DFRUGAL_PARQUET="$("$py" -c 'import pyarrow' >/dev/null 2>&1 && echo ON || echo OFF)" \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 || return 1  # CMake 4 against Debian's older package configs
  grep -E '^(NVJPEG_LIBRARY|OPENSSL_CRYPTO_LIBRARY|GTest_DIR|CLI11_DIR)' "$build/CMakeCache.txt"
}

compile() { PATH=$prefix/bin:$PATH cmake --build "$build" -j "$jobs" --target $targets; }

# The carried binaries on this machine's torch: they must find every library and start.
torch_libs() {
  "$python" -c 'import os, torch; d = os.path.dirname(torch.__file__); print(os.path.join(d, "lib"))'
}
# The CUDA runtime libraries of that torch's nvidia-* wheels (libcudart.so.13 and the rest), which
# torch's libraries find through their own RUNPATH but the carried binaries through this path.
nvidia_libs() {
  "$python" -c 'import glob, os, torch; sp = os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(sorted(set(glob.glob(os.path.join(sp, "nvidia", "*", "lib")) + glob.glob(os.path.join(sp, "nvidia", "cu13", "lib"))))))'
}
carried() {
  local t
  t=$(torch_libs) || return 1
  echo "torch libraries: $t"
  for b in frugal-torch test_gpu gpu_train_step; do
    [ -x "$carry/bin/$b" ] || { echo "missing $carry/bin/$b"; return 1; }
    if ldd "$carry/bin/$b" | grep 'not found'; then return 1; fi
  done
  "$carry/bin/frugal-torch" doctor
}

# A photo archive is what the tests and train phases read; test_gpu finds its sources and fixtures
# under the paths it was built with (FRUGAL_SOURCE_DIR, FRUGAL_BINARY_DIR: /work/main here).
fixture_paths() {
  if [ "$bindir" = "$carry/bin" ] && [ ! -e /work/main ]; then mkdir -p /work && ln -s "$root" /work/main; fi
  mkdir -p /work/main/build 2>/dev/null || true
}

loader_bench() {  # DECODE: 2 CPU threads feed the GPU, as on a 2-core notebook
  taskset -c 0,1 "$bindir/frugal-torch" bench loader /tmp/frugal-photos.zip --workers 2 --seconds 10 \
    --image-size 224 --batch-size 64 --decode "$1" --json > "$OUT/.loader-$1.json" || return 1
  cat "$OUT/.loader-$1.json"
}

train_bench() {  # MODEL: frugal's step and eager PyTorch's, same batch, AMP (fp16) and memory format
  local f amp
  f=$(GPU_BENCH_AMP=fp16 "$bindir/gpu_train_step" "$1" 96 224 15) || return 1
  echo "$f" > "$OUT/.train-$1-frugal.json"
  amp=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["amp"])' "$f")
  "$python" bench/gpu_train_ref.py "$1" 96 224 15 "$amp" > "$OUT/.train-$1-ref.json" || return 1
  cat "$OUT/.train-$1-frugal.json" "$OUT/.train-$1-ref.json"
}

loader_hybrid() {  # the T4 path on this GPU: nvJPEG's GPU_HYBRID backend, forced
  FRUGAL_NVJPEG_BACKEND=hybrid taskset -c 0,1 "$bindir/frugal-torch" bench loader /tmp/frugal-photos.zip --workers 2 \
    --seconds 8 --image-size 224 --batch-size 64 --decode gpu --json > "$OUT/.loader-hybrid.json" || return 1
  cat "$OUT/.loader-hybrid.json"
  grep -q '"decode_backend": *"cuda (forced)"' "$OUT/.loader-hybrid.json"
}

train() {  # RUN_DIR ARGS...: frugal train on the photos; prints the exit code last
  local dir=$1
  shift
  "$bindir/frugal-torch" train --data /tmp/frugal-photos.zip --run "$dir" --workers 4 --seed 5 "$@"
  local rc=$?
  echo "exit $rc"
  return $rc
}

# stamped CMD...: CMD's output (stdout and stderr), each line after the seconds it was printed at.
stamped() {
  "$@" 2>&1 | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done
  return "${PIPESTATUS[0]}"
}
# seconds_between FILE A B: from the first stamped line that starts with A to the first with B.
seconds_between() {
  "$python" - "$@" <<'PY'
import sys
path, a, b = sys.argv[1:]
t = {}
for line in open(path):
    stamp, _, text = line.rstrip("\n").partition(" ")
    for key in (a, b):
        if key not in t and text.startswith(key):
            t[key] = float(stamp)
print(round(t[b] - t[a], 3))
PY
}

# resnet18, GpuLoader, fp16: 3 epochs to time a warm one (from the end of the 2nd to the end of the
# 3rd in the log: evaluation and save included, start-up and the first epoch's warm-up not), then a
# run of about 30 s of training cut by a 15 s deadline (exit 75), then the same command again, which
# must resume and finish (exit 0).
train_calibrate() {
  local a="--model resnet18 --image-size 128 --batch-size 64 --decode gpu --amp fp16"
  rm -rf $runs/calib
  stamped train $runs/calib $a --epochs 3 > $runs/calib.log || { cat $runs/calib.log; return 1; }
  cat $runs/calib.log
  seconds_between $runs/calib.log "epoch 2/" "epoch 3/" > $runs/epoch_seconds || return 1
  echo "a warm epoch: $(cat $runs/epoch_seconds) s"
}
cut_args() {
  local e
  e=$("$python" -c "import math, sys; print(min(2000, max(3, math.ceil(30 / max(0.01, float(open(sys.argv[1]).read()))))))" $runs/epoch_seconds)
  echo --model resnet18 --image-size 128 --batch-size 64 --epochs "$e" --decode gpu --amp fp16
}
deadline_cut() {
  rm -rf $runs/cut
  train $runs/cut $(cut_args) --deadline 15s
  [ $? -eq 75 ]
}
resume_finishes() { train $runs/cut $(cut_args) && [ "$(ls $runs/cut/*.safetensors | wc -l)" -gt 0 ]; }
finite_losses() {
  "$python" - $runs/cut/metrics.jsonl $runs/calib/metrics.jsonl <<'PY'
import json, math, sys
bad = 0
for path in sys.argv[1:]:  # the cut-and-resumed run, and the 3-epoch calibration
    lines = [json.loads(l) for l in open(path) if l.strip()]
    for m in lines:
        for k in ("train_loss", "val_loss"):
            if not isinstance(m.get(k), (int, float)) or not math.isfinite(m[k]):
                print(path, "epoch", m.get("epoch"), k, m.get(k)); bad += 1
    print(path, len(lines), "epochs, losses", [(m.get("train_loss"), m.get("val_loss")) for m in lines][:6])
    if not lines: bad += 1
sys.exit(1 if bad else 0)
PY
}

# cnn on the GPU (CPU decode: 28 px), fp16 + loss scaler, deterministic: plain vs --grad-checkpoint.
grad_checkpoint() {
  rm -rf $runs/plain $runs/ckpt
  local a="--model cnn --epochs 2 --batch-size 64 --decode cpu --device cuda --amp fp16 --deterministic"
  train $runs/plain $a || return 1
  train $runs/ckpt $a --grad-checkpoint || return 1
  "$python" - $runs/plain/metrics.jsonl $runs/ckpt/metrics.jsonl <<'PY'
import json, sys
a, b = ([(m["train_loss"], m["val_loss"], m["val_accuracy"]) for m in map(json.loads, open(p)) ] for p in sys.argv[1:])
print("plain", a); print("grad-checkpoint", b)
sys.exit(0 if a == b and len(a) == 2 else 1)
PY
}

# efficientnet_b0 (dropout, stochastic depth: the GPU generator), deterministic, fp16: run A
# uninterrupted; run B stopped by SIGTERM half an epoch (A's second, from its log) after it logs
# the end of its first (saved after that step, exit 75), then resumed to the end. The newest checkpoints of A and B must hold the same bytes for
# every tensor.
resume_exact() {
  rm -rf $runs/effA $runs/effB
  local a="--model efficientnet_b0 --image-size 96 --batch-size 32 --epochs 3 --decode cpu --device cuda --amp fp16 --deterministic --keep-last 1"
  local rc half
  stamped train $runs/effA $a > $runs/effA.log || { cat $runs/effA.log; return 1; }
  cat $runs/effA.log
  half=$("$python" -c 'import sys; print(round(float(sys.argv[1]) / 2, 2))' "$(seconds_between $runs/effA.log "epoch 1/" "epoch 2/")")
  # frugal-torch itself in the background (a backgrounded function would be a subshell, and the
  # signal would stop the shell, not the trainer).
  "$bindir/frugal-torch" train --data /tmp/frugal-photos.zip --run $runs/effB --workers 4 --seed 5 $a \
    > $runs/effB.log 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null && ! grep -q '^epoch 1/' $runs/effB.log; do sleep 0.1; done
  sleep "$half"
  kill -TERM $pid 2>/dev/null
  wait $pid
  rc=$?
  cat $runs/effB.log
  echo "B stopped with $rc, signalled $half s after its first epoch ended"
  [ $rc -eq 75 ] || return 1
  train $runs/effB $a || return 1
  "$python" - $runs/effA $runs/effB <<'PY'
import glob, json, os, struct, sys
def newest(d):
    best = None
    for f in glob.glob(os.path.join(d, "*.safetensors")):
        if os.path.basename(f) == "best.safetensors": continue
        with open(f, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]; h = json.loads(fh.read(n))
        step = int(h.get("__metadata__", {}).get("step", -1))
        if best is None or step > best[0]: best = (step, f)
    return best
def tensors(f):
    with open(f, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]; h = json.loads(fh.read(n)); data = fh.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in h.items() if k != "__metadata__"}
(sa, fa), (sb, fb) = newest(sys.argv[1]), newest(sys.argv[2])
ta, tb = tensors(fa), tensors(fb)
diff = sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))
print("A", fa, "step", sa, "B", fb, "step", sb, len(ta), "tensors;", len(diff), "differ:", diff[:10])
sys.exit(0 if sa == sb and not diff else 1)
PY
}

nccl_overhead() {  # resnet18 on the photos: one rank of an NCCL group (FRUGAL_FORCE_GROUP) against no group
  local common=(--data /tmp/frugal-photos.zip --val-split 0.1 --model resnet18 --epochs 3 --batch-size 64 --amp fp16
                --device cuda --decode cpu --workers 4 --seed 1)
  # The first run of a process pays for the page cache and the GPU's first use: a warm-up, unused.
  "$bindir/frugal-torch" train "${common[@]}" --run "$runs/nccl-warm" > /dev/null 2>&1 || return 1
  "$bindir/frugal-torch" train "${common[@]}" --run "$runs/nccl-none" > /dev/null 2> "$runs/nccl-none.log" || return 1
  RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29631 FRUGAL_FORCE_GROUP=1 \
    "$bindir/frugal-torch" train "${common[@]}" --run "$runs/nccl-one" > /dev/null 2> "$runs/nccl-one.log" || return 1
  grep -q "distributed: rank 0 of 1 (nccl" "$runs/nccl-one.log" || return 1
  "$python" - "$runs/nccl-none/metrics.jsonl" "$runs/nccl-one/metrics.jsonl" > "$OUT/.nccl.json" <<'PY'
import json, sys
last = lambda f: [json.loads(l) for l in open(f) if '"val_accuracy"' in l][-1]
a, b = last(sys.argv[1]), last(sys.argv[2])
print(json.dumps({"no_group_images_per_s": a["images_per_s"], "nccl_1_rank_images_per_s": b["images_per_s"],
                  "overhead": 1 - b["images_per_s"] / a["images_per_s"], "comm_seconds": b["comm_seconds"],
                  "step_seconds": b["step_seconds"], "target": 0.03}))
PY
  cat "$OUT/.nccl.json"
}

# Two pipeline stages over NCCL, one per GPU (issue 31): resnet50 at 224 px on the photos, the plan
# line, a whole-model checkpoint that eval loads, and the per-rank figures of the last epoch. NCCL
# takes one rank per GPU ("Duplicate GPU detected", NVIDIA/nccl#418), so a machine with one GPU runs
# pipeline_shared_gpu instead and says so here.
pipeline_2gpu() {
  local gpus
  gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())')
  if [ "$gpus" -lt 2 ]; then
    echo "{\"skipped\": \"$gpus GPU: NCCL pipeline stages need 2 (pipeline_shared_gpu ran 2 stages on this one over Gloo)\"}" > "$OUT/.pipeline.json"
    cat "$OUT/.pipeline.json"
    return 0
  fi
  PATH=$(dirname "$python"):$PATH "$bindir/frugal-torch" train --data /tmp/frugal-photos.zip --val-split 0.1 \
    --model resnet50 --epochs 2 --batch-size 64 --amp fp16 --device cuda --decode cpu --workers 4 --seed 1 \
    --pipeline 2 --micro-batches 4 --nproc 2 --run "$runs/pipeline" > /dev/null 2> "$runs/pipeline.log" || return 1
  grep -q "pipeline: 2 stages x 4 micro-batches" "$runs/pipeline.log" || return 1
  local ck
  ck=$(ls "$runs/pipeline" | grep '^ckpt-' | sort | tail -1)
  "$bindir/frugal-torch" eval "$runs/pipeline/$ck" --data /tmp/frugal-photos.zip --json > "$runs/pipeline-eval.json" || return 1
  "$python" - "$runs/pipeline/metrics.jsonl" > "$OUT/.pipeline.json" <<'PY'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1]) if '"val_accuracy"' in l][-1]
print(json.dumps({"images_per_s": last["images_per_s"], "val_accuracy": last["val_accuracy"],
                  "pipeline": last["pipeline"]}))
PY
  cat "$OUT/.pipeline.json"
}

# Two pipeline stages on this one GPU (issue 31's CUDA path: stages on the GPU, fp16 autocast on
# each, one loss scaler whose scale and found-inf decision the stages share), over Gloo
# (FRUGAL_DIST_BACKEND=gloo: activations through host memory): resnet18 at 64 px, fp16,
# --deterministic, 2 micro-batches of 16 against one process with --batch-size 16 --accum 2.
# Weights, batch-norm statistics, optimizer state and the loss scale must be bitwise equal.
pipeline_shared_gpu() {
  local a=(--data /tmp/frugal-photos.zip --val-split 0.1 --model resnet18 --image-size 64 --epochs 1 --amp fp16
           --device cuda:0 --decode cpu --workers 2 --seed 1 --deterministic --save-every 10steps)
  rm -rf "$runs/pp-solo" "$runs/pp"
  RANK=0 WORLD_SIZE=1 FRUGAL_FORCE_GROUP=1 FRUGAL_DIST_BACKEND=gloo MASTER_ADDR=127.0.0.1 MASTER_PORT=29651 \
    "$bindir/frugal-torch" train "${a[@]}" --batch-size 16 --accum 2 --run "$runs/pp-solo" 2> "$runs/pp-solo.log" > /dev/null ||
    { cat "$runs/pp-solo.log"; return 1; }
  local r pids=()
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 FRUGAL_DIST_BACKEND=gloo MASTER_ADDR=127.0.0.1 MASTER_PORT=29652 \
      "$bindir/frugal-torch" train "${a[@]}" --batch-size 32 --pipeline 2 --micro-batches 2 --run "$runs/pp" \
      2> "$runs/pp$r.log" > /dev/null &
    pids+=($!)
  done
  local rc=0
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  cat "$runs/pp0.log" "$runs/pp1.log"
  [ $rc -eq 0 ] || return 1
  grep -q "pipeline: stage 0 of 2 (gloo)" "$runs/pp0.log" || return 1
  "$python" - "$runs/pp-solo" "$runs/pp" > "$OUT/.pipeline-shared.json" <<'PY'
import glob, json, os, struct, sys
def newest(d):
    return sorted(f for f in glob.glob(os.path.join(d, "ckpt-*")) if f.endswith(".safetensors"))[-1]
def tensors(f):
    with open(f, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]; h = json.loads(fh.read(n)); data = fh.read()
    meta = h.pop("__metadata__", {})
    return meta, {k: (v["dtype"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items()}
(fa, fb) = newest(sys.argv[1]), newest(sys.argv[2])
(ma, ta), (mb, tb) = tensors(fa), tensors(fb)
scale = "frugal.loss_scaler.scale"  # the loss scaler's state (checkpoint.h's kStatePrefix)
floats = [k for k in ta if ta[k][0] in ("F32", "F16", "BF16", "F64") or k.startswith("frugal.loss_scaler.")]
diff = sorted(k for k in floats if ta.get(k) != tb.get(k))
state = [k for k in floats if ".exp_avg" in k or "momentum" in k]
last = lambda d: [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl")) if '"val_accuracy"' in l][-1]
la, lb = last(sys.argv[1]), last(sys.argv[2])
r = {"one_process": os.path.basename(fa), "pipeline": os.path.basename(fb), "tensors": len(floats),
     "optimizer_state_tensors": len(state), "differ": diff[:10], "missing": sorted(set(ta) ^ set(tb))[:10],
     "val_accuracy": [la["val_accuracy"], lb["val_accuracy"]], "val_loss": [la["val_loss"], lb["val_loss"]],
     "loss_scale": [struct.unpack("<f", t[scale][1])[0] if scale in t else None for t in (ta, tb)],
     "pipeline": lb.get("pipeline")}
r["bitwise"] = (os.path.basename(fa) == os.path.basename(fb) and not diff and not r["missing"] and len(state) > 0
                and scale in floats)  # fp16: the scaler's state was compared too
print(json.dumps(r))
sys.exit(0 if r["bitwise"] else 1)
PY
  local ok=$?
  cat "$OUT/.pipeline-shared.json"
  return $ok
}

max_batch() {
  "$bindir/gpu_train_step" resnet50 512 224 max 16G > "$OUT/.maxbatch.json" && cat "$OUT/.maxbatch.json"
}

# The Python package's CUDA tests, on the module built here (gpu-prepare.sh carries it stripped).
python_cuda() {
  local want have
  want=$(sed -n 's/^python_version = "\(.*\)"/\1/p' "$carry/python/frugal/_build_info.py" 2>/dev/null)
  have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ -f "$carry/python/frugal/__init__.py" ] || { echo "no $carry/python: gpu-prepare.sh carries it"; return 1; }
  [ "$want" = "$have" ] || { echo "the module is for Python $want, this machine's is $have"; return 1; }
  PYTHONPATH="$carry/python:$root/tests/python" "$python" "$root/tests/python/test_cuda.py"
}

# `timeout` runs a new bash, which sees these.
PHOTOS_COUNT=$photos
export root OUT carry prefix build jobs targets python bindir runs PHOTOS_COUNT
export -f probe unpack configure compile torch_libs carried fixture_paths loader_bench loader_hybrid train_bench train \
  train_calibrate cut_args deadline_cut resume_finishes finite_losses grad_checkpoint resume_exact max_batch nccl_overhead \
  stamped seconds_between \
  python_cuda pipeline_2gpu pipeline_shared_gpu

if [ "$mode" = "--probe" ]; then
  budget=60
  phase probe 60 probe
  cp "/tmp/gpu-check-probe.log" "$OUT/probe.txt"
  exit 0
fi

phase probe 20 probe
cp "/tmp/gpu-check-probe.log" "$OUT/probe.txt"
[ -d "$carry/debs" ] || { say "no $carry: run scripts/gpu-prepare.sh here first and carry .gpu-carry"; exit 1; }
phase unpack 10 unpack || exit 1
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$carry/nvjpeg/lib:$(torch_libs 2>/dev/null):$(nvidia_libs 2>/dev/null)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUBLAS_WORKSPACE_CONFIG=:4096:8  # cuBLAS's deterministic mode, for --deterministic runs
mkdir -p $runs
if phase binaries 30 carried; then
  built=0
  say "using the binaries built here and carried (.gpu-carry/bin)"
else
  bindir=$build/bin
  phase configure 50 configure && phase build "$build_cap" compile
  built=$?
fi
test_bin=$bindir/test_gpu
[ "$bindir" = "$build/bin" ] && test_bin=$build/tests/test_gpu
if [ "$mode" != "--no-gpu" ] && [ $built -eq 0 ]; then
  fixture_paths
  # The tests make their photo archive with the python that has PIL (FRUGAL_PYTHON).
  # The requirements first (caps add up to ~425 s), then figures with what is left.
  # What the open issues need first (30: python_cuda; 31: pipeline_shared_gpu, test_gpu's Gloo case).
  phase photos 25 "$python" scripts/make-photos.py /tmp/frugal-photos --count "$photos" --zip /tmp/frugal-photos.zip
  phase python_cuda 40 python_cuda
  phase pipeline_shared_gpu 80 pipeline_shared_gpu
  phase test_gpu 75 env FRUGAL_PYTHON="$(command -v "$python")" "$test_bin" --gtest_output=json:"$OUT/test_gpu.json"
  phase nvjpeg_hybrid 15 loader_hybrid
  phase train_calibrate 35 train_calibrate
  phase deadline_cut 35 deadline_cut
  phase resume_finishes 70 resume_finishes
  phase finite_losses 10 finite_losses
  phase grad_checkpoint 50 grad_checkpoint
  phase resume_exact 110 resume_exact
  phase loader_cpu 15 loader_bench cpu
  phase loader_gpu 15 loader_bench gpu
  phase train_resnet18 30 train_bench resnet18
  phase max_micro_batch 40 max_batch
  phase nccl_overhead 60 nccl_overhead
  phase pipeline_2gpu 90 pipeline_2gpu
fi

"$python" - "$OUT" "$mode" <<'PY'
import json, os, sys
out, mode = sys.argv[1], sys.argv[2]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except Exception:
        return None
r = {"mode": mode, "phases": [json.loads(l) for l in open(os.path.join(out, ".phases.jsonl"))]}
rc = {p["phase"]: p.get("rc") for p in r["phases"]}
ph = {p["phase"]: p for p in r["phases"]}
def verdict(k):  # None: left out by GPU_CHECK_ONLY; a phase cut by the budget is false
    p = ph.get(k)
    if p and p.get("skipped") == "not in GPU_CHECK_ONLY":
        return None
    return bool(p) and p.get("rc") == 0
r["requirements"] = {k: verdict(k) for k in ("test_gpu", "nvjpeg_hybrid", "deadline_cut", "resume_finishes",
                                                  "finite_losses", "grad_checkpoint", "resume_exact", "python_cuda",
                                                  "pipeline_shared_gpu")}
r["all_requirements_met"] = all(v is not False for v in r["requirements"].values())
cpu, gpu = load(".loader-cpu.json"), load(".loader-gpu.json")
if cpu and gpu:
    ratio = gpu["images_per_s"] / cpu["images_per_s"] if cpu["images_per_s"] else None
    r["loader"] = {"cpu": cpu, "gpu": gpu, "gpu_over_cpu": ratio, "target": 3.0,
                   "target_met": ratio is not None and ratio >= 3.0}
for m in ("resnet18", "efficientnet_b0"):
    f, p = load(f".train-{m}-frugal.json"), load(f".train-{m}-ref.json")
    if f and p:
        r.setdefault("train_step", {})[m] = {"frugal": f, "pytorch_eager": p,
                                             "frugal_over_pytorch": f["images_per_s"] / p["images_per_s"]}
nc = load(".nccl.json")
if nc:
    nc["target_met"] = nc["overhead"] <= nc["target"]
    r["nccl_overhead"] = nc
ps = load(".pipeline-shared.json")
if ps:
    r["pipeline_shared_gpu"] = ps
pp = load(".pipeline.json")
if pp:
    r["pipeline_2gpu"] = pp
mb = load(".maxbatch.json")
if mb:
    r["max_micro_batch"] = mb
with open(os.path.join(out, "gpu-results.json"), "w") as f:
    json.dump(r, f, indent=1)
print(json.dumps(r, indent=1))
PY
rm -f "$OUT"/.loader-*.json "$OUT"/.train-*.json "$OUT"/.maxbatch.json "$OUT"/.nccl.json "$OUT"/.pipeline.json "$OUT"/.pipeline-shared.json "$phases"
[ "$mode" = "--probe" ] || [ "$mode" = "--no-gpu" ] || "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["all_requirements_met"] else 1)' "$OUT/gpu-results.json"
