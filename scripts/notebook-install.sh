# frugal in a notebook session, sourced by the README's notebook cell (issue 43):
#   . <the checkout>/scripts/notebook-install.sh WHEELS_DIR
# WHEELS_DIR is on the persistent disk. When it holds a wheel of frugal made for the torch of this
# notebook's Python (`python3`: its torch release, CUDA flavour and Python version), that wheel is
# installed (seconds; pip is told to leave torch alone). Else one is built once, with the checkout
# beside this script (`make wheel`: set-up, then the build, about 8 minutes on 2 cores; set-up's
# FRUGAL_PREFIX puts .venv and the build on the temporary disk), kept in WHEELS_DIR and installed.
# When set-up had to build against another torch (the notebook's has no kernels for this GPU, as
# Kaggle's P100), the wheel cannot go into this Python: this session runs the build's programs
# (on PATH) and says so; such a notebook builds every session. Says what it does in each case.
_frugal_install() {
  local wheels=$1 dir want py whl built
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  read -r want py < <(python3 -c 'import sys
try:
    import torch
    v = torch.__version__.split("+")[0].split(".")
    c = "cu" + torch.version.cuda.replace(".", "") if torch.version.cuda else "cpu"
    print("torch%s.%s.%s" % (v[0], v[1], c), end=" ")
except ImportError:
    print("none", end=" ")
print("cp%d%d" % sys.version_info[:2])')
  mkdir -p "$wheels"
  whl=$(ls -t "$wheels"/frugal-*+"$want"-"$py"-*.whl 2>/dev/null | head -1)
  if [ -z "$whl" ]; then
    echo "frugal: no wheel for this notebook's torch ($want, $py) in $wheels: building one, once" \
         "(about 8 minutes on 2 cores); the next sessions install it in seconds"
    make -C "$dir" wheel || return 1
    built=$(ls -t "$dir"/dist/frugal-*.whl 2>/dev/null | head -1)
    case $built in
      *+"$want"-"$py"-*) cp "$built" "$wheels/" && whl=$wheels/$(basename "$built") ;;
      "") echo "frugal: make wheel wrote no wheel in $dir/dist: this session runs the build's programs"
          export PATH="$dir/build/bin:$PATH"; return 0 ;;
      *) echo "frugal: set-up built frugal for another torch ($(basename "$built")) than this notebook's" \
              "($want): the notebook's has no kernels for this GPU. This session runs the build's programs;" \
              "each session builds again (the build needs that torch, which the notebook's Python lacks)"
         export PATH="$dir/build/bin:$PATH"; return 0 ;;
    esac
  fi
  python3 -m pip install -q --no-deps "$whl" || return 1
  echo "frugal: installed $(basename "$whl") (made for this notebook's torch; kept in $wheels)"
}
_frugal_install "$@"
