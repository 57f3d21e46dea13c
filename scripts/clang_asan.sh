# shellcheck shell=bash
# Sourced by scripts/sanitize.sh (the unit tests under ASan+UBSan) and scripts/fuzz.sh (the
# libFuzzer targets): one clang-14 ASan+UBSan build folder for both, configured alike, so that the
# torch-free libraries they share compile once (`make test` built them twice before: ~10 minutes
# of 2 cores). -fsanitize=fuzzer-no-link only adds the coverage hooks the fuzz targets need; the
# test executables link without libFuzzer. Needs ROOT set.
ASAN_BUILD=${ASAN_BUILD:-$ROOT/build-asan}
ASAN_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

configure_asan() {
  command -v clang++-14 >/dev/null ||
    { echo "$(basename "$0"): clang++-14 not installed (scripts/setup.sh installs clang-14 and libfuzzer-14-dev)" >&2; exit 1; }
  # Each test executable as one file (cmake/frugal.cmake, frugal_test): half of the tests' time.
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$ASAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFRUGAL_UNITY_BUILD=ON -DFRUGAL_WITH_TORCH=OFF -DFRUGAL_TESTS=ON -DFRUGAL_BENCH=OFF -DFRUGAL_FUZZ=ON \
    -DCMAKE_C_FLAGS="$ASAN_FLAGS" -DCMAKE_CXX_FLAGS="$ASAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$ASAN_FLAGS" \
    >"$ASAN_BUILD.configure.log" 2>&1 || { cat "$ASAN_BUILD.configure.log" >&2; exit 1; }
}
