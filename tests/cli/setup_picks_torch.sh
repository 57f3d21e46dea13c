#!/usr/bin/env bash
# scripts/setup.sh picks the PyTorch build that covers the machine's GPUs: a faked nvidia-smi
# reports the compute capability, faked notebook PyTorch packages report their architecture lists,
# and a dry run prints the exact commands. Runs on a copy of setup.sh in a scratch checkout, so
# the real .venv and build/ are never touched.
source "$(dirname "$0")/lib/common.sh"
keep_going
tmp=$t

real_py=$(command -v python3)
mkdir -p "$tmp/checkout/scripts" "$tmp/gpu-bin" "$tmp/nogpu-bin"
cp "$src/scripts/setup.sh" "$tmp/checkout/scripts/"
# The faked nvidia-smi answers only the query set-up is meant to make, and logs it.
cat >"$tmp/gpu-bin/nvidia-smi" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/nvidia-smi.log"
[ "\$*" = "--query-gpu=compute_cap --format=csv,noheader" ] || { echo "unexpected query: \$*" >&2; exit 6; }
for c in \$FAKE_CAPS; do echo "\$c"; done
EOF
chmod +x "$tmp/gpu-bin/nvidia-smi"

# A notebook's PyTorch, as far as set-up looks at it: version, CUDA, compiled architecture list.
fake_torch() {  # fake_torch DIR VERSION CUDA ARCHS
  mkdir -p "$1/torch"
  cat >"$1/torch/__init__.py" <<EOF
__version__ = "$2"
class version: cuda = "$3"
class _C:
    @staticmethod
    def _cuda_getArchFlags(): return "$4"
EOF
  cat >"$1/python3" <<EOF
#!/bin/sh
PYTHONPATH="$1" exec "$real_py" "\$@"
EOF
  chmod +x "$1/python3"
}
# Kaggle's image: a CUDA 12.8 build (sm_75 and newer); PyPI's 2.11 default: CUDA 13.0.
fake_torch "$tmp/kaggle" 2.7.0+cu128 12.8 "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120"
fake_torch "$tmp/cu130" 2.11.0+cu130 13.0 "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
# A python without torch.
printf '#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' "$tmp/nogpu-bin" "$real_py" >"$tmp/nogpu-bin/python3"
chmod +x "$tmp/nogpu-bin/python3"
"$tmp/nogpu-bin/python3" -c 'import torch' 2>/dev/null && { echo "skip: python3 imports a torch outside PYTHONPATH"; exit 77; }

# pip is pointed at a closed port: a set-up that ignores the dry run downloads nothing either.
nopip=(PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_RETRIES=0 PIP_TIMEOUT=2 PIP_CACHE_DIR="$tmp/pip-cache")
setup() {  # setup PYTHON_DIR CAPS [VAR=VALUE...]: runs the copied setup.sh; output in out/err
  local pydir=$1 caps=$2; shift 2
  : >"$tmp/nvidia-smi.log"
  env -i HOME="$tmp/home" PATH="$pydir:$tmp/gpu-bin:/usr/local/bin:/usr/bin:/bin" FAKE_CAPS="$caps" \
    FRUGAL_SETUP_SKIP_DEBS=1 "${nopip[@]}" "$@" bash "$tmp/checkout/scripts/setup.sh" >"$tmp/out" 2>"$tmp/err"
}
venv_py=$tmp/checkout/.venv/bin/python
pip="$venv_py -m pip install -q --disable-pip-version-check"

# 1. A P100 (sm_60) on a notebook whose PyTorch has no sm_60 code: a fresh .venv (not sharing the
#    notebook's packages) with the CUDA 12.6 build from PyTorch's index, nvJPEG to match.
setup "$tmp/kaggle" 6.0 FRUGAL_SETUP_DRY_RUN=1; rc=$?
[ $rc -eq 0 ] || bad "p100 dry run: exit $rc: $(cat "$tmp/err")"
grep -qx -- "--query-gpu=compute_cap --format=csv,noheader" "$tmp/nvidia-smi.log" && ok "asks nvidia-smi for compute_cap" ||
  bad "nvidia-smi was not asked for compute_cap: $(cat "$tmp/nvidia-smi.log")"
want="+ $pip torch==2.11.0 torchvision==0.26.0 --index-url https://download.pytorch.org/whl/cu126"
grep -qxF -- "$want" "$tmp/out" && ok "p100: CUDA 12.6 build from PyTorch's index" ||
  { bad "p100: expected the line: $want"; cat "$tmp/out"; }
grep -qxF -- "+ $pip 'cuda-toolkit[nvjpeg]==12.6.*'" "$tmp/out" && ok "p100: nvJPEG for CUDA 12.6" ||
  { bad "p100: no nvJPEG 12.6 line"; cat "$tmp/out"; }
grep -qxF -- "+ $tmp/kaggle/python3 -m venv .venv" "$tmp/out" && ok "p100: .venv without the notebook's packages" ||
  { bad "p100: expected a plain venv"; cat "$tmp/out"; }
grep -q "2.7.0+cu128, CUDA 12.8.*cannot run on the GPU with compute capability 6.0.*no kernel image" "$tmp/err" &&
  ok "p100: says why the notebook's PyTorch is not used" || { bad "p100: no reason given"; cat "$tmp/err"; }
[ ! -e "$tmp/checkout/.venv" ] && ok "dry run creates nothing" || bad "dry run created .venv"

# 2. The same GPU when PyTorch's index cannot be reached (our machines reach only PyPI): set-up
#    stops with the commands to run by hand and installs nothing.
setup "$tmp/kaggle" 6.0 FRUGAL_TORCH_INDEX=http://127.0.0.1:9/whl/cu126; rc=$?
[ $rc -eq 1 ] && ok "p100, index unreachable: exit 1" || bad "p100, index unreachable: exit $rc"
grep -q "cannot reach http://127.0.0.1:9/whl/cu126" "$tmp/err" &&
  grep -qF "$tmp/checkout/.venv/bin/python -m pip install torch==2.11.0 torchvision==0.26.0 --index-url http://127.0.0.1:9/whl/cu126" "$tmp/err" &&
  ok "p100, index unreachable: names the command" || { bad "p100, index unreachable: message"; cat "$tmp/err"; }
[ ! -e "$venv_py" ] && ok "p100, index unreachable: no .venv" || bad "p100, index unreachable: a .venv was made"

# 3. An H100 (sm_90) with the notebook's CUDA 13.0 PyTorch: reused, nothing downloaded.
setup "$tmp/cu130" 9.0 FRUGAL_SETUP_DRY_RUN=1; rc=$?
[ $rc -eq 0 ] || bad "h100 reuse: exit $rc: $(cat "$tmp/err")"
grep -qxF -- "+ $tmp/cu130/python3 -m venv --system-site-packages .venv" "$tmp/out" && ok "h100: reuses the notebook's PyTorch" ||
  { bad "h100: expected a venv over the notebook's packages"; cat "$tmp/out" "$tmp/err"; }
grep -q "torch==" "$tmp/out" && { bad "h100: would download torch"; cat "$tmp/out"; } || ok "h100: downloads no torch"
grep -q "reusing the PyTorch that .* imports (2.11.0+cu130, kernels .*sm_90.* cover GPU compute capability 9.0)" "$tmp/err" &&
  ok "h100: says it reuses and why" || { bad "h100: message"; cat "$tmp/err"; }

# 4. An H100 and no PyTorch yet: PyPI's default (CUDA 13.0) covers it; no other index.
setup "$tmp/nogpu-bin" 9.0 FRUGAL_SETUP_DRY_RUN=1; rc=$?
[ $rc -eq 0 ] || bad "h100 pypi: exit $rc: $(cat "$tmp/err")"
grep -qxF -- "+ $pip torch==2.11.0 torchvision==0.26.0" "$tmp/out" && ok "h100, no torch: PyPI's torch" ||
  { bad "h100, no torch: expected PyPI's torch"; cat "$tmp/out"; }
grep -q -- "--index-url" "$tmp/out" && bad "h100, no torch: uses another index" || true

# 5. A T4 (7.5) and a P100 in one machine: one build must cover both.
setup "$tmp/cu130" "7.5 6.0" FRUGAL_SETUP_DRY_RUN=1
grep -q -- "--index-url https://download.pytorch.org/whl/cu126" "$tmp/out" && ok "t4+p100: CUDA 12.6 build" ||
  { bad "t4+p100: expected the CUDA 12.6 build"; cat "$tmp/out" "$tmp/err"; }

# 6. Where the big folders go: FRUGAL_PREFIX; else the largest writable temporary disk when the
#    checkout's disk lacks room (here: when set-up is told it needs more than any disk has).
setup "$tmp/cu130" 9.0 FRUGAL_SETUP_DRY_RUN=1 FRUGAL_PREFIX="$tmp/big"
grep -qxF -- "+ ln -sfn $tmp/big/venv .venv" "$tmp/out" && grep -qxF -- "+ ln -sfn $tmp/big/build build" "$tmp/out" &&
  grep -q "^setup: .venv -> $tmp/big/venv (FRUGAL_PREFIX)" "$tmp/err" && ok "FRUGAL_PREFIX: .venv and build there, said" ||
  { bad "FRUGAL_PREFIX"; cat "$tmp/out" "$tmp/err"; }
# The checkout of this case sits on /dev/shm, a smaller disk than /tmp's here.
shm_free=$(df -PB1 /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')
tmp_free=$(df -PB1 "$tmp" | awk 'NR==2 {print $4}')
if [ -w /dev/shm ] && [ "${shm_free:-0}" -gt 0 ] && [ "$shm_free" -lt "$tmp_free" ]; then
  small=$(mktemp -d /dev/shm/frugal-setup-test.XXXXXX)
  on_exit 'rm -rf "$small"'
  mkdir -p "$small/scripts" "$tmp/big2"
  cp "$src/scripts/setup.sh" "$small/scripts/"
  : >"$tmp/nvidia-smi.log"
  env -i HOME="$tmp/home" PATH="$tmp/cu130:$tmp/gpu-bin:/usr/local/bin:/usr/bin:/bin" FAKE_CAPS=9.0 FRUGAL_SETUP_SKIP_DEBS=1 "${nopip[@]}" \
    FRUGAL_SETUP_DRY_RUN=1 FRUGAL_SETUP_NEED_GB=$((shm_free / 1000000000 + 1)) FRUGAL_TEMP_DIRS="/nonexistent $tmp/big2" \
    bash "$small/scripts/setup.sh" >"$tmp/out" 2>"$tmp/err"
  grep -qxF -- "+ ln -sfn $tmp/big2/frugal/venv .venv" "$tmp/out" && grep -qxF -- "+ ln -sfn $tmp/big2/frugal/build build" "$tmp/out" &&
    grep -qF "$tmp/big2 is the largest writable temporary disk" "$tmp/err" &&
    ok "no room in the checkout: the larger temporary disk, said" || { bad "temporary disk"; cat "$tmp/out" "$tmp/err"; }
else
  echo "skip no-room case: /dev/shm is not smaller than $tmp here"
fi
setup "$tmp/cu130" 9.0 FRUGAL_SETUP_DRY_RUN=1
grep -q "ln -sfn" "$tmp/out" && bad "room in the checkout: folders moved anyway" ||
  { grep -q "go in the checkout ($tmp/checkout): the checkout's disk has" "$tmp/err" && ok "room in the checkout: stays, said" ||
    { bad "room in the checkout: not said"; cat "$tmp/err"; }; }

# 7. The premise, on a real PyTorch when there is one with CUDA: the architecture list comes out
#    of the build without initialising CUDA.
if [ -n "${FRUGAL_PYTHON:-}" ] && "$FRUGAL_PYTHON" -c 'import torch; assert torch.version.cuda' 2>/dev/null; then
  r=$("$FRUGAL_PYTHON" -c 'import torch; print(torch._C._cuda_getArchFlags(), torch.cuda.is_initialized())')
  case $r in
    *sm_*\ False) ok "real torch: arch list without CUDA init ($r)" ;;
    *) bad "real torch: $r" ;;
  esac
fi

finish
