#!/usr/bin/env bash
# frugal du / frugal clean on a workspace whose checkpoints are written by an independent Python
# writer of the documented format (docs/formats.md, "Checkpoint file"; XXH3 through libxxhash).
set -euo pipefail
py=${FRUGAL_PYTHON:-python3}
"$py" -c 'import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library("xxhash") else 1)' ||
  { echo "skip: libxxhash not loadable from python"; exit 77; }
ws=$(mktemp -d) out=$(mktemp -d)
trap 'rm -rf "$ws" "$out"' EXIT
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
head -c 500 /dev/zero > "$ws/run/ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"
touch -d '2 hours ago' "$ws/run/ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"
head -c 100 /dev/zero > "$ws/run/best.safetensors.frugal-tmp-fresh0000000"  # a write in progress

stat -c %s "$ws"/run/*.safetensors > "$out/ckpt-sizes"
frugal du "$ws" --json > "$out/du.json"
frugal du "$ws" --budget 2K --json > "$out/du-small.json"
frugal clean "$ws" --dry-run --json > "$out/dry.json"
ls "$ws/run" | sort > "$out/after-dry"
frugal clean "$ws" --json > "$out/clean.json"
ls "$ws/run" | sort > "$out/after"
"$py" - "$ws" "$out" <<'PY'
import glob, json, os, sys
ws, out = sys.argv[1], sys.argv[2]
d = json.load(open(f"{out}/du.json"))
u = d["usage"]
size = os.path.getsize
ckpts = sum(int(v) for v in open(f"{out}/ckpt-sizes").read().split())
exp = {"data": 3000, "checkpoints": ckpts, "temporary": 600, "other": size(f"{ws}/run/config.json"),
             "total": 3000 + ckpts + 600 + size(f"{ws}/run/config.json")}
assert u == exp, (u, exp)
assert d["budget"] == 1 << 20 and d["budget_source"].endswith("config.json"), d
assert not d["over_budget"]
assert json.load(open(f"{out}/du-small.json"))["over_budget"] is True

def names(doc):
    return sorted(os.path.basename(r["path"]) for r in doc["removed"])
expected = ["ckpt-e0002-s000020.safetensors", "ckpt-e0005-s000050.safetensors.frugal-tmp-0123456789ab"]
dry = json.load(open(f"{out}/dry.json"))
assert dry["dry_run"] and names(dry) == expected, dry
assert len(open(f"{out}/after-dry").read().split()) == 8, "dry run removed something"
clean = json.load(open(f"{out}/clean.json"))
assert names(clean) == expected, clean
assert clean["freed"] == 500 + size(f"{ws}/run/ckpt-e0001-s000010.safetensors"), clean  # same-size files
left = open(f"{out}/after").read().split()
assert left == sorted(["best.safetensors", "best.safetensors.frugal-tmp-fresh0000000", "config.json",
                       "ckpt-e0001-s000010.safetensors", "ckpt-e0003-s000030.safetensors",
                       "ckpt-e0004-s000040.safetensors"]), left
assert any("s000040" in k and "invalid" in k for k in clean["kept"]), clean["kept"]
print("du/clean ok")
PY
