#!/usr/bin/env bash
# Runs every benchmark script bench/*.sh; each prints its ratios as JSON lines.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export FRUGAL_BIN=${FRUGAL_BIN:-$PWD/$build/bin}
export FRUGAL_BUILD=${FRUGAL_BUILD:-$PWD/$build}
export FRUGAL_PYTHON=${FRUGAL_PYTHON:-$PWD/.venv/bin/python}
rc=0
for b in bench/*.sh; do
  [ "$(basename "$b")" = run-all.sh ] && continue
  echo "== $b" >&2
  bash "$b" || { echo "bench: $b failed" >&2; rc=1; }
done
exit $rc
