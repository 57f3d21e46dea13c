#!/usr/bin/env bash
# clang-tidy-14 with the repository's .clang-tidy (bugprone-*, functions of at most 60 lines) over
# the torch-free code: src/{util,archive,image,checkpoint_files,budget,dataset,training,weights,report}/*.cpp
# and frugal's own commands (tools/frugal/cmd_*.cpp, cli.cpp, main.cpp, commands.cpp). Its compile
# database (one file per file, no LibTorch) is configured in build-tidy/; nothing is compiled.
# Exits non-zero on any finding (.clang-tidy: WarningsAsErrors). Only the sources' own lines are
# reported, not those of the headers they include (no -header-filter).
# Takes about 4 minutes here (7 min of CPU, JOBS=2 on 2 cores); `make tidy` and `make test`
# (scripts/test.sh) run it.
# Usage: scripts/tidy.sh [REGEX]   (REGEX narrows the files, e.g. scripts/tidy.sh src/archive/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${TIDY_BUILD_DIR:-$ROOT/build-tidy}
JOBS=${JOBS:-$(nproc)}
for tool in clang-tidy-14 run-clang-tidy-14; do
  command -v $tool >/dev/null || { echo "tidy.sh: $tool not installed (scripts/setup.sh installs clang-tidy-14)" >&2; exit 1; }
done

mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRUGAL_WITH_TORCH=OFF \
  -DFRUGAL_UNITY_BUILD=OFF -DFRUGAL_TESTS=OFF -DFRUGAL_BENCH=OFF -DFRUGAL_FUZZ=OFF >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 1; }

files='/src/(util|archive|image|checkpoint_files|budget|dataset|training|weights|report)/[^/]+\.cpp$'
files+='|/tools/frugal/(cmd_[^/]+|cli|main|commands)\.cpp$'
if [ $# -gt 0 ]; then
  # run-clang-tidy takes the files as regular expressions: those of the torch-free set that match $1.
  mapfile -t chosen < <(python3 -c 'import json, re, sys
for e in json.load(open(sys.argv[1])):
  f = e["file"]
  if re.search(sys.argv[2], f) and re.search(sys.argv[3], f): print(re.escape(f) + "$")' \
    "$BUILD/compile_commands.json" "$files" "$1")
  [ ${#chosen[@]} -gt 0 ] || { echo "tidy.sh: no torch-free source matches '$1'" >&2; exit 2; }
else
  chosen=("$files")
fi
tidy=$(command -v clang-tidy-14)
# run-clang-tidy echoes each command line before its output and colours it all (--use-color):
# only the findings are kept, as plain text.
set +e
run-clang-tidy-14 -quiet -j "$JOBS" -clang-tidy-binary "$tidy" -p "$BUILD" "${chosen[@]}" 2>&1 |
  sed 's/\x1b\[[0-9;]*m//g' | grep -v -E "^$tidy |^[0-9]+ warnings? generated\.\$|^Suppressed [0-9]+ warnings|^Use -header-filter|NOLINT"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "tidy.sh: clang-tidy found the problems above (fix them, or see .clang-tidy for why a check is off)" >&2
else
  echo "tidy.sh: no findings" >&2
fi
exit "$status"
