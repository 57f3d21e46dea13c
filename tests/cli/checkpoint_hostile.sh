#!/usr/bin/env bash
# frugal eval / export / train (resume) on crafted checkpoints: offsets that wrap past the end, a
# header nested a million levels deep, a delta based on itself, metadata of the wrong JSON type.
# Each is exit 3 naming the file (never a signal, never "internal error"), nothing is exported, and
# a resume meeting the crafted delta goes back to the previous good checkpoint.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
"$py" -c "import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library('xxhash') else 1)" 2>/dev/null ||
  skip "libxxhash not loadable from $py"
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 8
"$py" - "$t" <<'PY'
import ctypes, ctypes.util, json, struct, sys
t = sys.argv[1]
xxh = ctypes.CDLL(ctypes.util.find_library("xxhash"))
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
def pack(header_bytes, payload):
    header_bytes += b" " * ((8 - len(header_bytes) % 8) % 8)
    return struct.pack("<Q", len(header_bytes)) + header_bytes + payload
def checkpoint(path, md, tensors):
    payload = b"".join(data for _, _, _, data in tensors)
    md = dict(md, checksum="xxh3-64:%016x" % xxh.XXH3_64bits(payload, len(payload)))
    h, off = {"__metadata__": md}, 0
    for name, dtype, shape, data in tensors:
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    open(path, "wb").write(pack(json.dumps(h).encode(), payload))
    return md["checksum"]
md = {"format": "frugal-checkpoint", "version": "1", "kind": "best", "model": "cnn",
      "classes": '["bright", "dark"]', "image_size": "28", "channels": "1", "mean": "[0.5]", "std": "[0.5]",
      "epoch": "1", "step": "10", "loader": "{}", "schedule": "{}", "metrics": "{}", "config": "{}"}
end = 2**64 - 16
open(f"{t}/wrap.safetensors", "wb").write(pack(json.dumps(
    {"__metadata__": md, "conv1.weight": {"dtype": "U8", "shape": [end], "data_offsets": [0, end]}}).encode(), bytes(64)))
depth = 1000000
open(f"{t}/deep.safetensors", "wb").write(pack(b'{"w":' + b"[" * depth + b"]" * depth + b"}", b""))
checkpoint(f"{t}/classes.safetensors", dict(md, classes='{"a": 1}'), [("w", "U8", [4], b"abcd")])
# A delta whose base is itself: its checksum covers the payload only, so base_checksum can match.
name = "ckpt-e0002-s000020.delta.safetensors"
payload = b"\0" * 8
own = "xxh3-64:%016x" % xxh.XXH3_64bits(payload, len(payload))
import os
os.makedirs(f"{t}/run", exist_ok=True)
checkpoint(f"{t}/run/{name}", dict(md, kind="delta", base=name, base_checksum=own, delta_index="[]"),
           [("delta:w", "U8", [8], payload)])
PY

for f in wrap deep classes run/ckpt-e0002-s000020.delta; do
  for cmd in eval export; do
    if [[ $cmd == eval ]]; then
      expect_exit "eval $f is refused" 3 frugal eval "$t/$f.safetensors" --data "$t/data.zip"
    else
      expect_exit "export $f is refused" 3 frugal export "$t/$f.safetensors" -o "$t/out.onnx"
    fi
    expect_msg "...naming the file" "$(basename "$f").safetensors"
    ! grep -qi "internal error" "$t/err" || die "$cmd $f: internal error" "$t/err"
    [[ ! -e $t/out.onnx ]] || die "$cmd $f: exported"
  done
done

# Resume: a finished run's good checkpoints, then the crafted delta as the newest file.
train() { frugal train --data "$t/data.zip" --run "$t/run2" --model cnn --epochs 2 --batch-size 8 --val-split 0.25 --workers 1; }
train 2>"$t/train1.log" || die "the first training" "$t/train1.log"
good=$(cd "$t/run2" && ls ckpt-*.safetensors | tail -1)
step=$(echo "$good" | sed 's/.*-s0*\([0-9][0-9]*\)\..*/\1/')
crafted="ckpt-e0099-s009999.delta.safetensors"
"$py" - "$t/run/ckpt-e0002-s000020.delta.safetensors" "$t/run2/$crafted" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h["__metadata__"]["base"] = sys.argv[2].rsplit("/", 1)[1]  # itself, under its new name
hb = json.dumps(h).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + raw[8 + n:])
PY
train 2>"$t/train2.log" || die "resume past the crafted delta: exit $?" "$t/train2.log"
grep -q "skipping checkpoint .*$crafted" "$t/train2.log" || die "crafted delta not named" "$t/train2.log"
grep -q "resuming from $good (epoch 3, step $step)" "$t/train2.log" || die "did not resume from $good" "$t/train2.log"
ok "crafted checkpoints are exit 3; resume fell back to $good"

# craft_metadata FILE KEY CODE: rewrites a checkpoint's JSON metadata value KEY in place; CODE
# (Python) changes it as `v`. The checksum covers the tensors only, so the file still verifies.
craft_metadata() {
  "$py" - "$@" <<'PY'
import json, struct, sys
path, key, code = sys.argv[1:4]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
v = json.loads(h["__metadata__"][key])
exec(code)
h["__metadata__"][key] = json.dumps(v)
hb = json.dumps(h).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + raw[8 + n:])
PY
}

# A --time-budget run's checkpoint whose plan (schedule.time_budget) holds the wrong types: the
# resume is exit 3 naming that file (was: "the checkpoint's time budget: ..." without it).
set +e
frugal train --data "$t/data.zip" --run "$t/run3" --model cnn --batch-size 8 --val-split 0.25 --workers 1 \
  --time-budget 8s --deadline 3s 2>"$t/budget1.log"
rc=$?
set -e
[[ $rc == 75 ]] || die "the time-budget run cut by its deadline: exit $rc, expected 75" "$t/budget1.log"
cut=$(cd "$t/run3" && ls ckpt-*.safetensors | tail -1)
craft_metadata "$t/run3/$cut" schedule 'assert "time_budget" in v, v
v["time_budget"]["costs"] = {"step": "fast", "eval": [], "save": None}'
expect_exit "resuming a crafted time-budget plan is refused" 3 frugal train --data "$t/data.zip" --run "$t/run3" \
  --model cnn --batch-size 8 --val-split 0.25 --workers 1 --time-budget 8s
expect_msg "...naming the file" "$cut: "
! grep -qi "internal error" "$t/err" || die "internal error" "$t/err"

# A checkpoint whose config holds a batch size that is no integer: bad input (exit 3) naming the
# file, not a refused change of options (exit 2, "unreadable -> 8" before).
frugal train --data "$t/data.zip" --run "$t/run4" --model cnn --batch-size 8 --val-split 0.25 --workers 1 \
  --epochs 1 2>"$t/run4.log" || die "the run to craft failed" "$t/run4.log"
last=$(cd "$t/run4" && ls ckpt-*.safetensors | tail -1)
craft_metadata "$t/run4/$last" config 'assert v["batch_size"] == 8, v
v["batch_size"] = "8"'
expect_exit "resuming a checkpoint whose batch size is text is refused as bad input" 3 frugal train \
  --data "$t/data.zip" --run "$t/run4" --model cnn --batch-size 8 --val-split 0.25 --workers 1 --epochs 2
expect_msg "...naming the file" "$last: expected the checkpoint's effective batch"
expect_msg "...and what it holds" 'found batch_size "8", accum 1'
! grep -qi "internal error" "$t/err" || die "internal error" "$t/err"
finish
