#!/usr/bin/env bash
# Split + join round trip of a 2 GiB file, one JSON line:
#   frugal split --size 1000M, then frugal join --delete-parts (both --no-sync)
# against coreutils doing the same work with the same guarantees a user would script:
#   split -b 1000m F p_ && sha256sum p_* > sums && cat p_* > joined && sha256sum joined
# Neither side fsyncs (--no-sync exists for this comparison only). Reports the time ratio
# (baseline / frugal) [target >= 1.5] and each side's peak extra disk use, sampled every 50 ms by
# bench/disk_sampler.py two ways: statvfs (peak used bytes minus the used bytes at the start; on a
# shared machine other processes' writes show up here too) and the bytes allocated to the files in
# the work folder (immune to them). Best time of 2 runs each; peaks from the same runs.
# Builds nothing: expects FRUGAL_BIN (default build/bin). Work folder: $BENCH_DIR or /tmp.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FRUGAL=$(realpath -m "${FRUGAL_BIN:-$HERE/../build/bin}/frugal")
PY=${FRUGAL_PYTHON:-$HERE/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
SIZE_MIB=${SPLIT_JOIN_MIB:-2048}
[ -x "$FRUGAL" ] || { echo "bench/split_join.sh: $FRUGAL not built (build it, or set FRUGAL_BIN)" >&2; exit 1; }
W=$(mktemp -d "${BENCH_DIR:-/tmp}/frugal-bench-split.XXXXXX"); trap 'rm -rf "$W"' EXIT
avail=$(df -B1 --output=avail "$W" | tail -1)
need=$(( SIZE_MIB * 1048576 * 3 ))
[ "$avail" -gt "$need" ] || { echo "bench/split_join.sh: needs $((need >> 20)) MiB free in $W" >&2; exit 1; }

head -c $((SIZE_MIB * 1048576)) /dev/urandom > "$W/F"
ORIG=$(sha256sum "$W/F" | cut -d' ' -f1)

# run_measured NAME COMMAND: "seconds fs_peak_bytes folder_peak_bytes"
run_measured() {
  local tag=$1; shift
  rm -f "$W/peak.$tag" "$W/peak.$tag.ready"
  "$PY" "$HERE/disk_sampler.py" "$W" "$W/peak.$tag" & local sp=$!
  while [ ! -e "$W/peak.$tag.ready" ]; do sleep 0.01; done
  local t0 t1
  t0=$(date +%s.%N)
  ( cd "$W/run" && eval "$*" )
  t1=$(date +%s.%N)
  kill -TERM $sp; wait $sp || true
  echo "$(echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}') $(cat "$W/peak.$tag")"
}

baseline() {
  rm -rf "$W/run"; mkdir "$W/run"; sync
  run_measured base 'split -b 1000m ../F p_ && sha256sum p_* > sums && cat p_* > joined && sha256sum joined > joined.sum'
  [ "$(cut -d' ' -f1 "$W/run/joined.sum")" == "$ORIG" ] || { echo "baseline join differs" >&2; exit 1; }
}
frugal_side() {
  rm -rf "$W/run"; mkdir "$W/run"; sync
  run_measured frugal "'$FRUGAL' split ../F --size 1000M -o . --no-sync 2>/dev/null && \
    '$FRUGAL' join F.manifest.json -o joined --delete-parts --no-sync 2>/dev/null"
  [ "$(sha256sum "$W/run/joined" | cut -d' ' -f1)" == "$ORIG" ] || { echo "frugal join differs" >&2; exit 1; }
}

best_b=""; best_f=""
for round in 1 2; do
  out=$(baseline); read -r tb pb db <<< "$out"
  out=$(frugal_side); read -r tf pf df_ <<< "$out"
  echo "round $round: baseline ${tb}s peak ${pb} B (files ${db} B), frugal ${tf}s peak ${pf} B (files ${df_} B)" >&2
  if [ -z "$best_b" ] || awk "BEGIN{exit !($tb < $best_b)}"; then best_b=$tb; peak_b=$pb; files_b=$db; fi
  if [ -z "$best_f" ] || awk "BEGIN{exit !($tf < $best_f)}"; then best_f=$tf; peak_f=$pf; files_f=$df_; fi
done
rm -rf "$W/run"
awk -v b="$best_b" -v f="$best_f" -v pb="$peak_b" -v pf="$peak_f" -v db="$files_b" -v df="$files_f" \
    -v mib="$SIZE_MIB" 'BEGIN {
  g = 1073741824
  printf "{\"bench\": \"split_join\", \"file_mib\": %d, \"baseline_s\": %.3f, \"frugal_s\": %.3f, \"ratio\": %.2f, \"target\": 1.5, ", mib, b, f, b / f
  printf "\"baseline_peak_gib\": %.2f, \"frugal_peak_gib\": %.2f, \"baseline_files_peak_gib\": %.2f, \"frugal_files_peak_gib\": %.2f}\n", pb / g, pf / g, db / g, df / g }'
