#!/usr/bin/env bash
# Runs THERE, on the lent GPU machine (torch 2.11+cu130, nvcc and CMake present; no apt, no
# network), after scripts/gpu-prepare.sh filled .gpu-carry/ here. Builds frugal against that
# machine's torch, runs the CUDA tests, then a short benchmark, and writes $OUT/gpu-results.json
# (+ gpu-check.log, probe.txt, test_gpu.json). Everything fits in ~8 minutes: each phase runs
# under its own cap (and what is left of the total), so a slow phase cannot starve the rest.
#
#   scripts/gpu-check.sh            the whole check
#   scripts/gpu-check.sh --probe    only the probe (OS, glibc, GPU, nvJPEG, compilers; 60 s cap)
#   scripts/gpu-check.sh --no-gpu   unpack + configure + build of GPU_CHECK_TARGETS, no GPU phases
#                                   (what can be checked on a machine without one)
# Env: OUT (default out/gpu-check), GPU_CHECK_BUDGET (seconds, default 470), GPU_CHECK_TARGETS,
#      GPU_CHECK_JOBS (default: all cores), GPU_CHECK_PYTHON (default python3), PHOTOS (default 1000).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
OUT=${OUT:-$root/out/gpu-check}
mkdir -p "$OUT"
carry=$root/.gpu-carry
prefix=${GPU_CHECK_PREFIX:-/tmp/frugal-prefix}
build=${GPU_CHECK_BUILD:-/tmp/frugal-gpucheck-build}
budget=${GPU_CHECK_BUDGET:-470}
jobs=${GPU_CHECK_JOBS:-$(nproc)}
targets=${GPU_CHECK_TARGETS:-frugal frugal-torch test_gpu gpu_train_step}
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
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 || return 1  # CMake 4 against Debian's older package configs
  grep -E '^(NVJPEG_LIBRARY|OPENSSL_CRYPTO_LIBRARY|GTest_DIR|CLI11_DIR)' "$build/CMakeCache.txt"
}

compile() { PATH=$prefix/bin:$PATH cmake --build "$build" -j "$jobs" --target $targets; }

loader_bench() {  # DECODE: 2 CPU threads feed the GPU, as on a 2-core notebook
  taskset -c 0,1 "$build/bin/frugal-torch" bench loader /tmp/frugal-photos.zip --workers 2 --seconds 10 \
    --image-size 224 --batch-size 64 --decode "$1" --json > "$OUT/.loader-$1.json"
  cat "$OUT/.loader-$1.json"
}

train_bench() {  # MODEL: frugal's step and eager PyTorch's, same batch, AMP and memory format
  local f amp
  f=$("$build/bin/gpu_train_step" "$1" 96 224 15) || return 1
  echo "$f" > "$OUT/.train-$1-frugal.json"
  amp=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["amp"])' "$f")
  "$python" bench/gpu_train_ref.py "$1" 96 224 15 "$amp" > "$OUT/.train-$1-ref.json" || return 1
  cat "$OUT/.train-$1-frugal.json" "$OUT/.train-$1-ref.json"
}

train_decode_gpu() {  # the trainer fed by GpuLoader: a short session must run and stop resumable
  rm -rf /tmp/frugal-gpu-run
  "$build/bin/frugal-torch" train --data /tmp/frugal-photos.zip --run /tmp/frugal-gpu-run --model resnet18 \
    --epochs 1 --batch-size 32 --workers 2 --decode gpu --deadline 20s
  local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 75 ]
}

max_batch() {
  "$build/bin/gpu_train_step" resnet50 512 224 max 16G > "$OUT/.maxbatch.json" && cat "$OUT/.maxbatch.json"
}

# `timeout` runs a new bash, which sees these.
export root OUT carry prefix build jobs targets python
export -f probe unpack configure compile loader_bench train_bench train_decode_gpu max_batch

if [ "$mode" = "--probe" ]; then
  budget=60
  phase probe 60 probe
  cp "/tmp/gpu-check-probe.log" "$OUT/probe.txt"
  exit 0
fi

phase probe 20 probe
cp "/tmp/gpu-check-probe.log" "$OUT/probe.txt"
[ -d "$carry/debs" ] || { say "no $carry: run scripts/gpu-prepare.sh here first and carry .gpu-carry"; exit 1; }
phase unpack 10 unpack &&
  phase configure 50 configure &&
  phase build 200 compile
built=$?
if [ "$mode" != "--no-gpu" ] && [ $built -eq 0 ]; then
  # The tests make their photo archive with the python that has PIL (FRUGAL_PYTHON).
  phase test_gpu 20 env FRUGAL_PYTHON="$(command -v "$python")" "$build/tests/test_gpu" --gtest_output=json:"$OUT/test_gpu.json"
  phase photos 20 "$python" scripts/make-photos.py /tmp/frugal-photos --count "$photos" --zip /tmp/frugal-photos.zip
  phase loader_cpu 20 loader_bench cpu
  phase loader_gpu 20 loader_bench gpu
  phase train_decode_gpu 40 train_decode_gpu
  phase train_resnet18 30 train_bench resnet18
  phase train_efficientnet_b0 30 train_bench efficientnet_b0
  phase max_micro_batch 40 max_batch
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
mb = load(".maxbatch.json")
if mb:
    r["max_micro_batch"] = mb
with open(os.path.join(out, "gpu-results.json"), "w") as f:
    json.dump(r, f, indent=1)
print(json.dumps(r, indent=1))
PY
rm -f "$OUT"/.loader-*.json "$OUT"/.train-*.json "$OUT"/.maxbatch.json "$phases"
