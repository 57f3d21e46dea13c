#!/usr/bin/env bash
# Runs HERE, before scripts/gpu-check.sh runs on the lent GPU machine (no apt, no network there):
# fills .gpu-carry/ (git-ignored; name it in the device call's `carry`) with
#   debs/    the Debian packages frugal builds and links against (apt-get download), which the
#            check unpacks with dpkg -x into a private prefix (never into /)
#   nvjpeg/  nvJPEG's header and library from .venv (PyPI's nvidia-nvjpeg, scripts/setup.sh)
#   bin/     frugal-torch, test_gpu and gpu_train_step from build/ (built here against the same
#            torch wheel; `fb frugal-torch test_gpu gpu_train_step` first), stripped: the check
#            then spends no time building (a LibTorch build does not fit in its 10 minutes)
#   python/  the package frugal with its module built for the GPU machine's Python
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
# The Python package (scripts/gpu-check.sh's python_cuda phase), its module stripped, for the GPU
# machine's Python: GPU_PYTHON_VERSION, default 3.12 (its image's /opt/torch/.venv, KINDS.md). When
# .venv's Python is another, core.cpp is compiled again against that version's headers with the
# command ninja has for frugal._core (the same flags, precompiled header and libraries: only the
# Python headers and the module's name change; torch's headers are the same in every wheel of one
# torch version). Its headers come from python$V-config or pyenv.
gpu_py=${GPU_PYTHON_VERSION:-3.12}
here_py=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
rm -rf "$carry/python" && mkdir -p "$carry/python/frugal"
if ! compgen -G "build/python/frugal/_core*.so" >/dev/null; then
  say "no build/python/frugal/_core*.so: the python_cuda phase will fail; build frugal_python here first"
elif [ "$gpu_py" = "$here_py" ]; then
  cp build/python/frugal/*.py "$carry/python/frugal/"
  for f in build/python/frugal/_core*.so; do strip -o "$carry/python/frugal/$(basename "$f")" "$f"; done
else
  inc=$(python$gpu_py-config --includes 2>/dev/null | sed 's/^-I\([^ ]*\).*/\1/') || true
  [ -f "$inc/Python.h" ] || inc=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/$gpu_py*/include/python$gpu_py 2>/dev/null | tail -1) || true
  if [ -z "$inc" ] || [ ! -f "$inc/Python.h" ]; then
    say "no Python $gpu_py headers here (python$gpu_py-config or pyenv): the python_cuda phase will fail"
  else
    here_inc=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    here_tag=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    tag=".cpython-${gpu_py/./}-x86_64-linux-gnu.so"
    mkdir -p build/python-gpu
    cmds=$(ninja -C build -t commands frugal_python | grep -E 'python/src/core\.cpp|_core\.cpython')
    compile=$(sed -n 1p <<<"$cmds" | sed "s#-isystem $here_inc #-isystem $inc #; s#-MD -MT [^ ]* -MF [^ ]* ##; s#-o CMakeFiles/frugal_python.dir/python/src/core.cpp.o#-o python-gpu/core.cpp.o#")
    link=$(sed -n 2p <<<"$cmds" | sed "s#python/frugal/_core$here_tag#python-gpu/_core$tag#; s#CMakeFiles/frugal_python.dir/python/src/core.cpp.o#python-gpu/core.cpp.o#")
    grep -q -- "-isystem $inc " <<<"$compile" || { say "could not point frugal._core's compile at Python $gpu_py"; exit 1; }
    say "compiling frugal._core for Python $gpu_py ($inc)"
    (cd build && bash -c "$compile" && bash -c "$link") || { say "frugal._core for Python $gpu_py failed"; exit 1; }
    cp build/python/frugal/*.py "$carry/python/frugal/"
    sed -i "s/^python_version = .*/python_version = \"$gpu_py\"/; s#^python_executable = .*#python_executable = \"python$gpu_py\"#" \
      "$carry/python/frugal/_build_info.py"
    strip -o "$carry/python/frugal/_core$tag" "build/python-gpu/_core$tag"
  fi
fi
grep -q 'frugal: CUDA architectures.*90' build.configure.log 2>/dev/null || say "warning: build/ may lack sm_90 kernels (FRUGAL_CUDA_ARCHITECTURES)"

carry_mib=$(du -sm "$carry" | cut -f1)
tree_mib=$(git ls-files -co --exclude-standard -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
say "$carry: ${carry_mib} MiB, working tree: ${tree_mib} MiB (limit 64 MiB together)"
if [ $((carry_mib + tree_mib)) -ge 56 ]; then
  say "too close to the 64 MiB transfer limit; remove large untracked files first"; exit 1
fi
