#!/usr/bin/env bash
# frugal du / frugal clean on workspaces whose files are not what frugal wrote: a run's config.json
# as a FIFO, a link to /dev/zero, a link out of the folder; keep_last written as "10", 10.0, 1e1, -1;
# a Hugging Face model folder with a config.json of its own; a run folder a training holds; names
# that are not UTF-8; a link to a folder outside. Each command must end within seconds (a hang is
# `timeout`'s 124), in bounded memory, refuse (exit 3, naming the file) before deleting anything,
# and never touch anything outside the workspace. Checkpoints are written by an independent Python
# writer of the documented format (docs/formats.md, "Checkpoint file"; XXH3 through libxxhash).
source "$(dirname "$0")/lib/common.sh"
keep_going
"$py" -c 'import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library("xxhash") else 1)' ||
  skip "libxxhash not loadable from $py"
needs_commands frugal timeout
holder=
on_exit '[[ -z $holder ]] || kill $holder 2>/dev/null || true'

# make_run DIR N [CONFIG_JSON]: N valid checkpoints (steps 10, 20, ...) and a config.json.
make_run() {
  mkdir -p "$1"
  "$py" - "$1" "$2" <<'PY'
import ctypes, ctypes.util, json, struct, sys
xxh = ctypes.CDLL(ctypes.util.find_library("xxhash"))
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
run, n = sys.argv[1], int(sys.argv[2])
for i in range(1, n + 1):
    payload = bytes([i]) * 4000
    md = {"format": "frugal-checkpoint", "version": "1", "kind": "full", "model": "cnn",
          "metric_name": "val_accuracy", "metric_value": repr(0.1 * i), "metric_mode": "max",
          "checksum": "xxh3-64:%016x" % xxh.XXH3_64bits(payload, len(payload))}
    h = json.dumps({"__metadata__": md, "w": {"dtype": "U8", "shape": [4000], "data_offsets": [0, 4000]}}).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open("%s/ckpt-e%04d-s%06d.safetensors" % (run, i, 10 * i), "wb").write(struct.pack("<Q", len(h)) + h + payload)
PY
  [[ -z ${3:-} ]] || printf '%s\n' "$3" > "$1/config.json"
}
ckpts() { ls "$1" | grep -c '^ckpt-'; }
# bounded CMD...: runs CMD under timeout 10 (stdout $t/out, stderr $t/err); $t/rss gets its peak
# resident memory in KiB when /usr/bin/time can tell.
bounded() {
  local rc=0
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -o "$t/rss" -f %M timeout 10 "$@" >"$t/out" 2>"$t/err" || rc=$?
  else
    echo 0 > "$t/rss"
    timeout 10 "$@" >"$t/out" 2>"$t/err" || rc=$?
  fi
  return $rc
}
refused() {  # refused NAME WHAT_IN_MESSAGE CMD...: exit 3 within 10 s, in < 200 MB, naming WHAT
  local name=$1 what=$2 rc=0
  shift 2
  bounded "$@" || rc=$?
  if [[ $rc == 3 ]]; then ok "$name: exit 3"; else bad "$name: exit $rc, expected 3 (124: it hung)" "$t/err"; fi
  expect_msg "$name: names the file" "$what"
  check "$name: in bounded memory ($(tail -1 "$t/rss") KiB)" '[ "$(tail -1 "$t/rss")" -lt 200000 ]'
}

# ---- config.json as a FIFO, a link to /dev/zero, a link out of the folder
make_run "$t/fifo/run" 4 && mkfifo "$t/fifo/run/config.json"
make_run "$t/zero/run" 4 && ln -s /dev/zero "$t/zero/run/config.json"
mkdir -p "$t/outside" && echo '{"format": "frugal-run-config", "keep_last": 0, "keep_best": 0}' > "$t/outside/config.json"
make_run "$t/linked/run" 4 && ln -s "$t/outside/config.json" "$t/linked/run/config.json"
OUTSIDE=$(stat -c '%Y %s' "$t/outside/config.json")
for ws in fifo zero linked; do
  refused "du, config.json $ws" "$t/$ws/run/config.json" frugal du "$t/$ws"
  refused "du --json, config.json $ws" "$t/$ws/run/config.json" frugal du "$t/$ws" --json
  refused "clean, config.json $ws" "$t/$ws/run/config.json" frugal clean "$t/$ws"
  check "clean, config.json $ws: nothing deleted" '[ "$(ckpts "$t/$ws/run")" == 4 ]'
done
check "the file the link points to is untouched" '[ "$(stat -c "%Y %s" "$t/outside/config.json")" == "$OUTSIDE" ]'
expect_msg "a link is named as one" "a symbolic link"

# ---- keep_last as a string, a float, an exponent, a negative: 8 checkpoints each
for v in '"10"' 10.0 1e1 -1; do
  d="$t/keep/$(echo "$v" | tr -d '"-.')$( [[ $v == -* ]] && echo neg)"
  make_run "$d" 8 '{"format": "frugal-run-config", "keep_last": '"$v"', "keep_best": 1}'
  case $v in
    10.0 | 1e1)
      bounded frugal clean "$d" --json
      check "keep_last $v is 10: clean exits 0 and keeps all 8" '[ $? == 0 ] && [ "$(ckpts "$d")" == 8 ]'
      ;;
    *)
      refused "keep_last $v" "config.json: keep_last" frugal clean "$d"
      expect_msg "keep_last $v: the value is named" "$v"
      check "keep_last $v: nothing deleted" '[ "$(ckpts "$d")" == 8 ]'
      ;;
  esac
done

# ---- a Hugging Face model folder: its own config.json, model.safetensors; never a run
mkdir -p "$t/hfws/vit"
echo '{"architectures": ["ViTForImageClassification"], "keep_last": 1}' > "$t/hfws/vit/config.json"
head -c 50000 /dev/urandom > "$t/hfws/vit/model.safetensors"
bounded frugal du "$t/hfws" --json
expect_json "du: a Hugging Face folder is no run, its weights are 'other'" \
  'd["runs"] == [] and d["usage"]["checkpoints"] == 0 and d["usage"]["other"] > 50000'
bounded frugal clean "$t/hfws" --json
check "clean leaves the Hugging Face folder as it was" '[ $? == 0 ] && [ "$(ls "$t/hfws/vit" | wc -l)" == 2 ]'

# ---- clean beside a running training: the run folder is locked (flock, as train holds it)
make_run "$t/busy/run" 6 '{"format": "frugal-run-config", "keep_last": 1, "keep_best": 0}'
head -c 500 /dev/zero > "$t/busy/run/ckpt-e0007-s000070.safetensors.frugal-tmp-0123456789ab"
touch -d '2 hours ago' "$t/busy/run/ckpt-e0007-s000070.safetensors.frugal-tmp-0123456789ab"
make_run "$t/busy/idle" 6 '{"format": "frugal-run-config", "keep_last": 1, "keep_best": 0}'
"$py" -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(600)' "$t/busy/run" "$t/locked" &
holder=$!
for _ in $(seq 200); do [[ -e $t/locked ]] && break; sleep 0.05; done
[[ -e $t/locked ]] || die "the lock holder did not start"
bounded frugal clean "$t/busy"
check "clean beside a training exits 0" '[ $? == 0 ]'
expect_msg "it names the run in use and its holder" "$t/busy/run: in use by"
expect_msg "with the holder's pid" "(pid $holder)"
check "nothing in the training's folder was removed" '[ "$(ls "$t/busy/run" | wc -l)" == 8 ]'
check "the idle run beside it was cleaned" '[ "$(ckpts "$t/busy/idle")" == 1 ]'
make_run "$t/busy/idle" 6
bounded frugal clean "$t/busy" --json
expect_json "clean --json lists the skipped run" \
  'd["skipped"][0]["path"].endswith("busy/run") and "pid" in d["skipped"][0]["reason"]'
kill $holder && wait $holder 2>/dev/null
holder=

# ---- names that are not UTF-8 (a Latin-1 run folder and archive)
lat=$(printf 'r\xe9')
make_run "$t/latin/$lat" 4 '{"format": "frugal-run-config", "keep_last": 1, "keep_best": 0, "disk_budget": "1G"}'
head -c 3000 /dev/urandom > "$t/latin/$(printf 'd\xe9.zip')"
bounded frugal du "$t/latin" --json
check "du --json on a Latin-1 run folder exits 0" '[ $? == 0 ]'
expect_json "du --json is valid JSON naming the run" 'len(d["runs"]) == 1 and d["runs"][0]["checkpoints"] == 4'
bounded frugal clean "$t/latin" --json
check "clean --json on a Latin-1 run folder exits 0" '[ $? == 0 ]'
expect_json "clean --json reports what it removed" 'len(d["removed"]) == 3 and "\ufffd" in d["removed"][0]["path"]'
bounded frugal du "$t/latin"
check "du's table on a Latin-1 path exits 0, escaped" '[ $? == 0 ] && grep -qF "\\xe9" "$t/out"'

# ---- a link to a folder outside the workspace is never followed
make_run "$t/far/run" 5 '{"format": "frugal-run-config", "keep_last": 1, "keep_best": 0}'
head -c 500 /dev/zero > "$t/far/run/x.frugal-tmp-0123456789ab"
touch -d '2 hours ago' "$t/far/run/x.frugal-tmp-0123456789ab"
mkdir -p "$t/ws2" && ln -s "$t/far" "$t/ws2/far"
bounded frugal clean "$t/ws2"
check "clean through a linked folder exits 0 and removes nothing there" \
  '[ $? == 0 ] && [ "$(ls "$t/far/run" | wc -l)" == 7 ]'

finish
