#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/<name>.cmake defines <name>_fuzz, written to build-fuzz/fuzz/) with clang-14, ASan and
# UBSan in build-fuzz/, then runs each for FUZZ_SECONDS (default 20) over its seed corpus
# fuzz/corpus/<name>/. New inputs go to build-fuzz/corpus/<name>/ (the repository's corpus stays
# small); crash inputs to build-fuzz/artifacts/. Exits non-zero when any target crashes.
# A target's own libFuzzer flags, one a line, in fuzz/<name>.options come after the defaults (the
# later flag wins), e.g. decompress's -malloc_limit_mb: the 2 GiB dictionary its limits allow.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-20}
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

mkdir -p "$BUILD"
command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 not installed (apt-get install clang-14 libfuzzer-14-dev)" >&2; exit 1; }
CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFRUGAL_WITH_TORCH=OFF -DFRUGAL_TESTS=OFF -DFRUGAL_BENCH=OFF -DFRUGAL_FUZZ=ON \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 1; }

failed=0
for frag in "$ROOT"/fuzz/*.cmake; do
  name=$(basename "$frag" .cmake)
  ninja -C "$BUILD" -j2 "${name}_fuzz"
  mkdir -p "$BUILD/corpus/$name" "$BUILD/artifacts/$name" "$ROOT/fuzz/corpus/$name"
  echo "fuzz.sh: running ${name}_fuzz for ${SECONDS_EACH}s" >&2
  own=()
  [[ -f $ROOT/fuzz/$name.options ]] && mapfile -t own < <(grep -v '^#' "$ROOT/fuzz/$name.options" | grep .)
  if ! UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$BUILD/fuzz/${name}_fuzz" \
      -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${own[@]}" \
      -artifact_prefix="$BUILD/artifacts/$name/" "$BUILD/corpus/$name" "$ROOT/fuzz/corpus/$name" \
      >"$BUILD/${name}_fuzz.log" 2>&1; then
    echo "fuzz.sh: ${name}_fuzz FAILED; input in $BUILD/artifacts/$name/, log $BUILD/${name}_fuzz.log:" >&2
    tail -40 "$BUILD/${name}_fuzz.log" >&2
    failed=1
  else
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$BUILD/${name}_fuzz.log" | sed "s/^/${name}: /" >&2 || true
  fi
done
exit $failed
