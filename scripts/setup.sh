#!/usr/bin/env bash
# Installs what building and testing frugal needs, idempotently; quiet when everything is present.
#   - Debian packages (apt-get; needs root or sudo)
#   - .venv: LibTorch via the PyPI torch wheel (pinned), plus the Python packages the tests and
#     benchmarks use as independent references. A user's own Torch_DIR wins (torch is then not
#     installed), and an already importable PyTorch (notebook images) is reused through
#     --system-site-packages instead of downloading a second copy of several GB.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=${FRUGAL_TORCH_VERSION:-2.11.0}
TORCHVISION_VERSION=${FRUGAL_TORCHVISION_VERSION:-0.26.0}
PY_PACKAGES="safetensors onnx onnxruntime tensorboard numpy pillow pytest scikit-image"
DEB_PACKAGES="build-essential cmake ninja-build pkg-config ccache git zip unzip
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libpng-dev libdeflate-dev libzstd-dev libxxhash-dev libssl-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libfuzzer-14-dev libclang-rt-14-dev python3 python3-venv dataset-fashion-mnist"

say() { echo "setup: $*" >&2; }

install_debs() {
  local missing=()
  for p in $DEB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The python that creates .venv: pyenv's or the system's python3.
pick_python() {
  command -v python3 || { say "python3 not found; install python3"; exit 1; }
}

setup_venv() {
  local py stamp want
  py=$(pick_python)
  want="torch=$TORCH_VERSION vision=$TORCHVISION_VERSION pkgs=$PY_PACKAGES torch_dir=${Torch_DIR:-}"
  stamp=.venv/.frugal-setup
  if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  local torch_spec="torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION"
  if [ -n "${Torch_DIR:-}" ]; then
    say "Torch_DIR is set ($Torch_DIR): building against it; .venv gets torch only for tests"
  fi
  if [ ! -x .venv/bin/python ]; then
    if "$py" -c "import torch" 2>/dev/null; then
      say "reusing the PyTorch already importable by $py ($("$py" -c 'import torch; print(torch.__version__)'))"
      "$py" -m venv --system-site-packages .venv
    else
      "$py" -m venv .venv
    fi
  fi
  if .venv/bin/python -c "import torch, torchvision" 2>/dev/null; then
    torch_spec=""   # keep the torch that is there (the user's, or ours from an earlier run)
  fi
  say "installing Python packages into .venv (first time: torch is a large download)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  if [ -n "$torch_spec" ] && ! .venv/bin/python -m pip install -q --disable-pip-version-check $torch_spec; then
    say "torch $TORCH_VERSION is not on the registry; installing the nearest version it has"
    .venv/bin/python -m pip install -q --disable-pip-version-check "torch>=2.7,<2.12" torchvision
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check $PY_PACKAGES
  echo "$want" > "$stamp"
}

# nvJPEG for `--decode gpu` (docs/gpu.md): PyPI's nvidia-nvjpeg at the version that the torch
# wheel's CUDA (the cuda-toolkit meta-package it pulls) pins; CPU-only torch builds need none.
install_nvjpeg() {
  compgen -G ".venv/lib/python3*/site-packages/nvidia/cu*/include/nvjpeg.h" >/dev/null && return 0
  local cuda
  cuda=$(.venv/bin/python -m pip show cuda-toolkit 2>/dev/null | sed -n 's/^Version: //p')
  [ -z "$cuda" ] && return 0
  say "installing nvJPEG for CUDA $cuda into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check "cuda-toolkit[nvjpeg]==$cuda" ||
    say "nvJPEG could not be installed; frugal builds without GPU decoding"
}

install_debs
setup_venv
install_nvjpeg
