#!/usr/bin/env bash
# The unit tests of the torch-free libraries under clang-14's sanitizers, run by `make test`
# (scripts/test.sh) and on its own by `make sanitize`:
#   build-asan/  ASan + UBSan (every error fatal) for util, archive, image, budget, dataset,
#                training, weights, report;
#   build-tsan/  TSan for the suites whose code runs threads: the disk-budget watcher and the signal
#                guard (budget), pack's and verify's hashing threads and the SHA-256 worker (archive),
#                the progress line's redraw thread and the checkpoint writer's background worker
#                (util: SerialWorker), the loaders' batch queue (dataset: PrefetchQueue).
# LibTorch is not instrumented (a sanitizer build of code that links it would report LibTorch's own
# atomics as races), so the threaded parts of the loaders and the checkpoint writer are torch-free
# templates (include/frugal/dataset/prefetch_queue.h, include/frugal/util/serial_worker.h) that the
# torch code instantiates with its tensors: the code under TSan here is the code they run.
# Usage: scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
command -v clang++-14 >/dev/null || { echo "sanitize.sh: clang++-14 not installed (scripts/setup.sh installs it)" >&2; exit 1; }

# build-asan/ is configured by scripts/clang_asan.sh, shared with scripts/fuzz.sh.
# shellcheck source=scripts/clang_asan.sh
source "$ROOT/scripts/clang_asan.sh"
configure_tsan() {  # configure_tsan DIR FLAGS
  # Each test executable as one file (cmake/frugal.cmake, frugal_test): half of these builds' time.
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFRUGAL_UNITY_BUILD=ON -DFRUGAL_WITH_TORCH=OFF -DFRUGAL_TESTS=ON -DFRUGAL_BENCH=OFF -DFRUGAL_FUZZ=OFF \
    -DFRUGAL_PARQUET=OFF -DCMAKE_C_FLAGS="$2" -DCMAKE_CXX_FLAGS="$2" -DCMAKE_EXE_LINKER_FLAGS="$2" \
    >"$1.configure.log" 2>&1 || { cat "$1.configure.log" >&2; exit 1; }
}

failed=0
for kind in "${@:-asan tsan}"; do
  for k in $kind; do
    case $k in
      asan)
        dir=$ASAN_BUILD
        configure_asan
        targets="test_util test_archive test_image test_budget test_dataset test_training test_weights test_report"
        # A test of a library built without exceptions-from-UBSan would pass a bad shift quietly:
        # every UBSan report ends the test (halt_on_error), as does every ASan one.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        filter='^test_(util|archive|image|budget|dataset|training|weights|report)$'
        ;;
      tsan)
        dir=$ROOT/build-tsan
        configure_tsan "$dir" "-fsanitize=thread -fno-omit-frame-pointer"
        targets="test_budget test_archive test_util test_dataset"
        export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
        filter='^test_(budget|archive|util|dataset)$'
        ;;
      *) echo "sanitize.sh: unknown sanitizer '$k' (asan or tsan)" >&2; exit 2 ;;
    esac
    echo "sanitize.sh: building $k ($targets)" >&2
    # shellcheck disable=SC2086
    ninja -C "$dir" -j "$JOBS" $targets >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log" >&2; failed=1; continue; }
    # Only the unit tests of those binaries: gtest's discovered names are Suite.Test, and ctest
    # knows which executable each runs, so select by the test's command, and pass the tests'
    # numbers (ctest numbers them in this order): a regular expression of ~700 names is past what
    # ctest compiles, and it then ran nothing and passed.
    nums=$(ctest --test-dir "$dir" --show-only=json-v1 | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
pat = re.compile(sys.argv[1])
print(",".join(str(i + 1) for i, t in enumerate(d["tests"])
               if t.get("command") and pat.search(t["command"][0].rsplit("/", 1)[-1])))' "$filter")
    n=$(printf '%s' "$nums" | tr ',' '\n' | grep -c . || true)
    [ "$n" -gt 0 ] || { echo "sanitize.sh: no $k tests found in $dir" >&2; failed=1; continue; }
    echo "sanitize.sh: running $n $k tests" >&2
    # Passed only when every one of the n ran (a skipped test is counted as passed by ctest).
    if ctest --test-dir "$dir" -j "$JOBS" --timeout 600 --output-on-failure -I "0,0,0,$nums" >"$dir/test.log" 2>&1 &&
      grep -q "100% tests passed, 0 tests failed out of $n\$" "$dir/test.log"; then
      tail -3 "$dir/test.log" | sed "s/^/$k: /" >&2
    else
      grep -E "Failed|\*\*\*|ERROR: (Address|Thread)Sanitizer|runtime error|WARNING: ThreadSanitizer|out of [0-9]+$" \
        "$dir/test.log" | head -40 >&2
      echo "sanitize.sh: $k tests FAILED (or not all $n ran); log $dir/test.log" >&2
      failed=1
    fi
  done
done
exit $failed
