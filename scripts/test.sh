#!/usr/bin/env bash
# Runs every test: unit and CLI tests through CTest, the wheel's install test, a short fuzzing pass,
# then the sanitizer builds' unit tests (scripts/sanitize.sh) and clang-tidy over the torch-free code (scripts/tidy.sh, about
# 4 minutes on 2 cores).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rc=0
# Each part's wall time, printed last (also when the run is stopped: CI's clock, ^C).
t=$(date +%s)
times=""
lap() {
  times+="$1 $(($(date +%s) - t)) s; "
  t=$(date +%s)
}
trap 'echo "test.sh: ${times}(then stopped)"; exit 143' TERM INT
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 || rc=1
lap ctest
# The binary wheel (make wheel) built in the same build folder, once no test runs from it, then
# installed into a fresh venv of torch, torchvision and numpy and used from there, then the README's
# notebook cell run with it for two sessions (about 5 minutes in all;
# FRUGAL_WHEEL_TEST=0 leaves it out of a run by hand). Only with the Python package built.
if [ "${FRUGAL_WHEEL_TEST:-1}" != 0 ] && ls "$build"/python/frugal/_core*.so > /dev/null 2>&1; then
  if tests/wheel/wheel_test.sh "$build"; then
    # The README's notebook cell with that wheel: two sessions, the second compiling nothing.
    tests/wheel/notebook_cell_test.sh "$(ls -t dist/frugal-*.whl | head -1)" || rc=1
  else
    rc=1
  fi
  lap wheel
fi
if [ -x scripts/fuzz.sh ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh || rc=1
  lap fuzz
fi
# The torch-free libraries' unit tests under ASan+UBSan and the threaded ones under TSan
# (FRUGAL_SANITIZE=0 leaves them out of a run by hand).
if [ "${FRUGAL_SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh || rc=1
  lap sanitize
fi
# clang-tidy's findings fail the run as compiler warnings do in CI (FRUGAL_TIDY=0 leaves it out).
if [ "${FRUGAL_TIDY:-1}" != 0 ]; then
  scripts/tidy.sh || rc=1
  lap tidy
fi
echo "test.sh: $times"
[ $rc -eq 0 ] && echo "test: all passed" || echo "test: FAILED"
exit $rc
