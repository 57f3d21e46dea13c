#!/usr/bin/env bash
# Runs every test: unit and CLI tests through CTest, then a short fuzzing pass.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rc=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 || rc=1
if [ -x scripts/fuzz.sh ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh || rc=1
fi
[ $rc -eq 0 ] && echo "test: all passed" || echo "test: FAILED"
exit $rc
