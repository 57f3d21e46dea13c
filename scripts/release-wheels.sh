#!/usr/bin/env bash
# The wheels of a release (issue 43): for each torch release named, set-up puts that torch (and its
# torchvision) into .venv, the build folder build-torchX.Y is built for it, and `make wheel`'s
# wheel is made and tested as `make test` tests it (tests/wheel/wheel_test.sh: a fresh venv of that
# torch only; notebook_cell_test.sh: the README's cell, two sessions). The wheels land in dist/.
# .github/workflows/wheels.yml runs this for a tag, one torch release per job; by hand:
#   scripts/release-wheels.sh            the torch set-up pins (2.11.0), in build/
#   scripts/release-wheels.sh 2.12.1     that release (each takes a full build: ~30 min on 2 cores)
# A release is only as tested as this script's run for it: the note of each release says which
# ran where.
set -euo pipefail
cd "$(dirname "$0")/.."
# torchvision for each torch release (the torch each torchvision wheel on PyPI requires).
vision_for() {
  case $1 in
    2.11.*) echo 0.26.0 ;; 2.12.0) echo 0.27.0 ;; 2.12.*) echo 0.27.1 ;; 2.13.*) echo 0.28.0 ;;
    2.14.0) echo 0.29.0 ;; 2.14.*) echo 0.29.2 ;;
    # No torchvision for 2.15 on PyPI yet (checked 2026-12-07: 0.29.2 is the newest, built for 2.14):
    # the tests that need torchvision skip, saying so.
    2.15.*) echo none ;;
    *) echo "release-wheels: no torchvision known for torch $1; add it here" >&2; exit 2 ;;
  esac
}
[ $# -gt 0 ] || set -- ""
for torch in "$@"; do
  build=build
  env=()
  if [ -n "$torch" ]; then
    build=build-torch$(echo "$torch" | cut -d. -f1,2)
    env=(FRUGAL_TORCH_VERSION="$torch" FRUGAL_TORCHVISION_VERSION="$(vision_for "$torch")")
  fi
  echo "release-wheels: torch ${torch:-as set-up pins it} in $build/" >&2
  env "${env[@]}" make build BUILD="$build" CMAKE_FLAGS=-DFRUGAL_WERROR=ON
  wheel=$(scripts/make_wheel.sh "$build" | tail -1)
  tests/wheel/wheel_test.sh "$build" "$wheel"
  tests/wheel/notebook_cell_test.sh "$wheel"
  echo "release-wheels: $wheel passed its tests" >&2
done
