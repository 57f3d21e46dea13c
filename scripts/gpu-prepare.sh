#!/usr/bin/env bash
# Runs HERE, before scripts/gpu-check.sh runs on the lent GPU machine (no apt, no network there):
# fills .gpu-carry/ (git-ignored; name it in the device call's `carry`) with
#   debs/    the Debian packages frugal builds and links against (apt-get download), which the
#            check unpacks with dpkg -x into a private prefix (never into /)
#   nvjpeg/  nvJPEG's header and library from .venv (PyPI's nvidia-nvjpeg, scripts/setup.sh)
#   bin/     frugal-torch, test_gpu and gpu_train_step from build/ (built here against the same
#            torch wheel; `fb frugal-torch test_gpu gpu_train_step` first), stripped: the check
#            then spends no time building (a LibTorch build does not fit in its 10 minutes)
# and checks that what travels stays well under the 64 MiB limit. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=.gpu-carry
say() { echo "gpu-prepare: $*" >&2; }

# Runtime libraries, the -dev packages whose headers/CMake/pkg-config files the build reads, and
# pkg-config itself (the GPU image may lack it). Bookworm names; the check reports the other OS.
DEBS="libturbojpeg0 libturbojpeg0-dev libjpeg62-turbo libjpeg62-turbo-dev libspng0 libspng-dev zlib1g-dev
  libdeflate0 libdeflate-dev libzstd1 libzstd-dev libxxhash0 libxxhash-dev libssl3 libssl-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus3 libtomlplusplus-dev libgtest-dev libgmock-dev
  libbenchmark1debian libbenchmark-dev pkgconf pkgconf-bin libpkgconf3 pkg-config libgloo-dev libre2-9 libre2-dev
  libwebp7 libwebpdemux2 libwebp-dev libgif7 libgif-dev libtiff6 libtiff-dev libjbig0 liblerc4 liblzma5 liblzma-dev libbz2-1.0 libbz2-dev"

mkdir -p "$carry/debs" "$carry/nvjpeg/include" "$carry/nvjpeg/lib"
missing=()
for p in $DEBS; do
  compgen -G "$carry/debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "downloading ${#missing[@]} packages: ${missing[*]}"
  (cd "$carry/debs" && apt-get download -q "${missing[@]}" >/dev/null) || {
    say "apt-get download failed; run 'apt-get update' (as root) and try again"; exit 1; }
fi

nv=$(ls -d .venv/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -1 || true)
if [ -z "$nv" ] || [ ! -f "$nv/include/nvjpeg.h" ]; then
  say "nvJPEG not in .venv; run scripts/setup.sh (it installs nvidia-nvjpeg)"; exit 1
fi
cp -u "$nv/include/nvjpeg.h" "$carry/nvjpeg/include/"
cp -u "$nv"/lib/libnvjpeg.so.* "$carry/nvjpeg/lib/"

mkdir -p "$carry/bin"
for b in build/bin/frugal-torch build/tests/test_gpu build/bin/gpu_train_step; do
  [ -x "$b" ] || b=$(find build -name "$(basename "$b")" -type f -perm -u+x 2>/dev/null | head -1)
  if [ -z "$b" ] || [ ! -x "$b" ]; then
    say "no $(basename "$b") in build/: the check will build there (slow); build it here first"
    continue
  fi
  if [ ! "$carry/bin/$(basename "$b")" -nt "$b" ]; then
    strip -o "$carry/bin/$(basename "$b")" "$b"
  fi
done
# The Python package (scripts/gpu-check.sh's python_cuda phase), its module stripped.
if compgen -G "build/python/frugal/_core*.so" >/dev/null; then
  mkdir -p "$carry/python/frugal"
  for f in build/python/frugal/*.py; do cp -u "$f" "$carry/python/frugal/"; done
  for f in build/python/frugal/_core*.so; do
    [ "$carry/python/frugal/$(basename "$f")" -nt "$f" ] || strip -o "$carry/python/frugal/$(basename "$f")" "$f"
  done
else
  say "no build/python/frugal/_core*.so: the python_cuda phase will fail; build frugal_python here first"
fi
grep -q -- '-real;90\|;90' build/CMakeCache.txt 2>/dev/null || say "warning: build/ may lack sm_90 kernels (FRUGAL_CUDA_ARCHITECTURES)"

carry_mib=$(du -sm "$carry" | cut -f1)
tree_mib=$(git ls-files -co --exclude-standard -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
say "$carry: ${carry_mib} MiB, working tree: ${tree_mib} MiB (limit 64 MiB together)"
if [ $((carry_mib + tree_mib)) -ge 56 ]; then
  say "too close to the 64 MiB transfer limit; remove large untracked files first"; exit 1
fi
