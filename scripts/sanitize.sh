#!/usr/bin/env bash
# The unit tests of the torch-free libraries under clang-14's sanitizers, run by `make test`
# (scripts/test.sh) and on its own by `make sanitize`:
#   build-asan/  ASan + UBSan (every error fatal) for util, archive, image, budget, dataset, run,
#                weights;
#   build-tsan/  TSan for the suites whose code runs threads: the disk-budget watcher and the signal
#                guard (budget), pack's and verify's hashing threads and the SHA-256 worker (archive),
#                the progress line's redraw thread (util).
# LibTorch is not instrumented, so the libraries that link it (the loader's queue, the checkpoint
# writer) are not built here: a sanitizer build of them would report LibTorch's own atomics as races.
# Usage: scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
command -v clang++-14 >/dev/null || { echo "sanitize.sh: clang++-14 not installed (scripts/setup.sh installs it)" >&2; exit 1; }

configure() {  # configure DIR FLAGS
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFRUGAL_WITH_TORCH=OFF -DFRUGAL_TESTS=ON -DFRUGAL_BENCH=OFF -DFRUGAL_FUZZ=OFF -DFRUGAL_PARQUET=OFF \
    -DCMAKE_C_FLAGS="$2" -DCMAKE_CXX_FLAGS="$2" -DCMAKE_EXE_LINKER_FLAGS="$2" >"$1.configure.log" 2>&1 ||
    { cat "$1.configure.log" >&2; exit 1; }
}

failed=0
for kind in "${@:-asan tsan}"; do
  for k in $kind; do
    case $k in
      asan)
        dir=$ROOT/build-asan
        configure "$dir" "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
        targets="test_util test_archive test_image test_budget test_dataset test_run test_weights"
        # A test of a library built without exceptions-from-UBSan would pass a bad shift quietly:
        # every UBSan report ends the test (halt_on_error), as does every ASan one.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        filter='^test_(util|archive|image|budget|dataset|run|weights)$'
        ;;
      tsan)
        dir=$ROOT/build-tsan
        configure "$dir" "-fsanitize=thread -fno-omit-frame-pointer"
        targets="test_budget test_archive test_util"
        export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
        filter='^test_(budget|archive|util)$'
        ;;
      *) echo "sanitize.sh: unknown sanitizer '$k' (asan or tsan)" >&2; exit 2 ;;
    esac
    echo "sanitize.sh: building $k ($targets)" >&2
    # shellcheck disable=SC2086
    ninja -C "$dir" -j "$JOBS" $targets >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log" >&2; failed=1; continue; }
    # Only the unit tests of those binaries: gtest's discovered names are Suite.Test, and ctest
    # knows which executable each runs, so select by the test's command.
    list=$(ctest --test-dir "$dir" --show-only=json-v1 | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
pat = re.compile(sys.argv[1])
names = [t["name"] for t in d["tests"] if t.get("command") and pat.search(t["command"][0].rsplit("/", 1)[-1])]
print("\n".join(names))' "$filter")
    n=$(printf '%s\n' "$list" | grep -c . || true)
    echo "sanitize.sh: running $n $k tests" >&2
    regex="^($(printf '%s\n' "$list" | sed 's/[][\.*^$+?(){}|/]/\\&/g' | paste -sd'|'))\$"
    ctest --test-dir "$dir" -j "$JOBS" --timeout 600 --output-on-failure -R "$regex" >"$dir/test.log" 2>&1 &&
      tail -3 "$dir/test.log" | sed "s/^/$k: /" >&2 ||
      { grep -E "Failed|\*\*\*|ERROR: (Address|Thread)Sanitizer|runtime error|WARNING: ThreadSanitizer" "$dir/test.log" | head -40 >&2
        echo "sanitize.sh: $k tests FAILED; log $dir/test.log" >&2; failed=1; }
  done
done
exit $failed
