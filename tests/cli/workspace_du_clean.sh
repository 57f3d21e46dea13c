#!/usr/bin/env bash
# frugal du / frugal clean on a workspace whose checkpoints are written by an independent Python
# writer of the documented format (docs/formats.md, "Checkpoint file"; XXH3 through libxxhash).
# Usage is what the file system allocates; clean removes only temporaries whose writer is gone
# (a live one holds its flock) and never an interrupted join's output, which it lists with how to
# resume.
source "$(dirname "$0")/lib/common.sh"
"$py" -c 'import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library("xxhash") else 1)' ||
  skip "libxxhash not loadable from $py"
needs_commands frugal
ws=$t/workspace out=$t/results
holder=
on_exit '[[ -z $holder ]] || kill $holder 2>/dev/null || true'
mkdir -p "$ws" "$out"
mkdir -p "$ws/data" "$ws/run"
head -c 3000 /dev/zero > "$ws/data/a.zip"
echo '{"keep_last": 1, "keep_best": 1, "disk_budget": "1M"}' > "$ws/run/config.json"
"$py" - "$ws/run" <<'PY'
import ctypes, ctypes.util, json, struct, sys
xxh = ctypes.CDLL(ctypes.util.find_library("xxhash"))
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
def write(path, step, metric, corrupt=False):
    payload = bytes([step % 256]) * 400
    md = {"format": "frugal-checkpoint", "version": "1", "kind": "full", "model": "cnn",
          "metric_name": "val_accuracy", "metric_value": repr(metric), "metric_mode": "max",
          "checksum": "xxh3-64:%016x" % xxh.XXH3_64bits(payload, len(payload))}
    h = json.dumps({"__metadata__": md, "w": {"dtype": "U8", "shape": [400], "data_offsets": [0, 400]}}).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    if corrupt:
        payload = b"\xff" + payload[1:]
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + payload)
run = sys.argv[1]
write(f"{run}/ckpt-e0001-s000010.safetensors", 10, 0.9)
write(f"{run}/ckpt-e0002-s000020.safetensors", 20, 0.5)
write(f"{run}/ckpt-e0003-s000030.safetensors", 30, 0.6)
write(f"{run}/ckpt-e0004-s000040.safetensors", 40, 0.7, corrupt=True)
write(f"{run}/best.safetensors", 10, 0.9)
PY
head -c 500 /dev/zero > "$ws/run/ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"  # its writer died
touch -d '2 hours ago' "$ws/run/ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"
head -c 100 /dev/zero > "$ws/run/best.safetensors.frugal-tmp-fresh0000000"  # written just now, no lock
# A live writer: holds the owner's lock (flock, as frugal's writers do); old by its mtime, so only
# the lock can keep it.
live="$ws/run/ckpt-e0006-s000060.safetensors.frugal-tmp-11ve11ve11ve"
"$py" -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"x" * 100)
open(sys.argv[2], "w").close()
time.sleep(600)' "$live" "$out/locked" &
holder=$!
for _ in $(seq 100); do [[ -e $out/locked ]] && break; sleep 0.05; done
[[ -e $out/locked ]] || die "lock holder did not start"
touch -d '2 hours ago' "$live"
# An interrupted join (after --delete-parts, the only copy of its parts), quiet for hours.
head -c 5000 /dev/urandom > "$ws/data/big.zip.frugal-join"
echo '{}' > "$ws/data/big.zip.manifest.json"
touch -d '2 hours ago' "$ws/data/big.zip.frugal-join"

"$py" - "$ws" > "$out/blocks.json" <<'PY'
import json, os, sys
ws = sys.argv[1]
print(json.dumps({os.path.relpath(os.path.join(r, f), ws): os.lstat(os.path.join(r, f)).st_blocks * 512
                  for r, _, fs in os.walk(ws) for f in fs}))
PY
frugal du "$ws" --json > "$out/du.json"
frugal du "$ws" --budget 2K --json > "$out/du-small.json"
frugal clean "$ws" --dry-run --json > "$out/dry.json"
ls "$ws/run" | sort > "$out/after-dry"
frugal clean "$ws" --json > "$out/clean.json"
ls "$ws/run" | sort > "$out/after"
kill $holder || die "the lock holder was not alive through clean"
wait $holder 2>/dev/null || true
[[ -f $ws/data/big.zip.frugal-join ]] || die "clean removed a partial join"
"$py" - "$ws" "$out" <<'PY'
import glob, json, os, sys
ws, out = sys.argv[1], sys.argv[2]
d = json.load(open(f"{out}/du.json"))
u = d["usage"]
b = json.load(open(f"{out}/blocks.json"))  # allocated bytes per file, before clean
def kind(p):
    if ".frugal-tmp-" in p: return "temporary"
    if p.endswith(".frugal-join"): return "partial"
    if p.startswith("data/"): return "data"
    if p.endswith(".safetensors"): return "checkpoints"
    return "other"
exp = {"data": 0, "checkpoints": 0, "temporary": 0, "partial": 0, "other": 0}
for p, n in b.items():
    exp[kind(p)] += n
exp["total"] = sum(b.values())
assert u == exp, (u, exp)  # allocated blocks, not declared sizes
assert d["budget"] == 1 << 20 and d["budget_source"].endswith("config.json"), d
assert not d["over_budget"]
assert json.load(open(f"{out}/du-small.json"))["over_budget"] is True

def names(doc):
    return sorted(os.path.basename(r["path"]) for r in doc["removed"])
expected = ["ckpt-e0002-s000020.safetensors", "ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"]
dry = json.load(open(f"{out}/dry.json"))
assert dry["dry_run"] and names(dry) == expected, dry
assert len(open(f"{out}/after-dry").read().split()) == 9, "dry run removed something"
clean = json.load(open(f"{out}/clean.json"))
assert names(clean) == expected, clean
assert clean["freed"] == b["run/ckpt-e0002-s000020.safetensors"] + \
    b["run/ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"], clean
left = open(f"{out}/after").read().split()
assert left == sorted(["best.safetensors", "best.safetensors.frugal-tmp-fresh0000000", "config.json",
                       "ckpt-e0001-s000010.safetensors", "ckpt-e0003-s000030.safetensors",
                       "ckpt-e0004-s000040.safetensors",
                       "ckpt-e0006-s000060.safetensors.frugal-tmp-11ve11ve11ve"]), left
kept = clean["kept"]
assert any("s000040" in k and "invalid" in k for k in kept), kept
assert any("11ve11ve11ve" in k and "being written" in k for k in kept), kept
assert any("fresh0000000" in k and "last minute" in k for k in kept), kept
assert any("big.zip.frugal-join" in k and "resume: frugal join " + ws + "/data/big.zip.manifest.json" in k
           for k in kept), kept
print("du/clean ok")
PY
finish
