#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/<name>.cmake defines <name>_fuzz, written to build-asan/fuzz/) with clang-14, ASan and
# UBSan in build-asan/ (scripts/clang_asan.sh: the folder scripts/sanitize.sh's unit tests use),
# then runs each for FUZZ_SECONDS (default 20) over its seed corpus fuzz/corpus/<name>/. New inputs
# go to build-asan/corpus/<name>/ (the repository's corpus stays small); crash inputs to
# build-asan/artifacts/. Exits non-zero when any target crashes.
# A target's own libFuzzer flags, one a line, in fuzz/<name>.options come after the defaults (the
# later flag wins), e.g. decompress's -malloc_limit_mb: the 2 GiB dictionary its limits allow.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${FUZZ_SECONDS:-20}
JOBS=${JOBS:-$(nproc)}
# shellcheck source=scripts/clang_asan.sh
source "$ROOT/scripts/clang_asan.sh"
BUILD=$ASAN_BUILD
configure_asan

# Every target is built first (one ninja call: both cores busy), then the targets run JOBS at a time:
# each libFuzzer process uses one core, and one after another they left the other core idle.
names=()
for frag in "$ROOT"/fuzz/*.cmake; do names+=("$(basename "$frag" .cmake)"); done
ninja -C "$BUILD" -j "$JOBS" "${names[@]/%/_fuzz}"

run_one() {  # run_one NAME: fuzz it for SECONDS_EACH; its log in $BUILD/NAME_fuzz.log
  local name=$1 own=()
  mkdir -p "$BUILD/corpus/$name" "$BUILD/artifacts/$name" "$ROOT/fuzz/corpus/$name"
  [[ -f $ROOT/fuzz/$name.options ]] && mapfile -t own < <(grep -v '^#' "$ROOT/fuzz/$name.options" | grep .)
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$BUILD/fuzz/${name}_fuzz" \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${own[@]}" \
    -artifact_prefix="$BUILD/artifacts/$name/" "$BUILD/corpus/$name" "$ROOT/fuzz/corpus/$name" \
    >"$BUILD/${name}_fuzz.log" 2>&1
}

failed=0
for ((i = 0; i < ${#names[@]}; i += JOBS)); do
  batch=("${names[@]:i:JOBS}")
  echo "fuzz.sh: running ${batch[*]/%/_fuzz} for ${SECONDS_EACH}s" >&2
  pids=()
  for name in "${batch[@]}"; do
    run_one "$name" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    name=${batch[$k]}
    if ! wait "${pids[$k]}"; then
      echo "fuzz.sh: ${name}_fuzz FAILED; input in $BUILD/artifacts/$name/, log $BUILD/${name}_fuzz.log:" >&2
      tail -40 "$BUILD/${name}_fuzz.log" >&2
      failed=1
    else
      grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$BUILD/${name}_fuzz.log" | sed "s/^/${name}: /" >&2 || true
    fi
  done
done
exit $failed
