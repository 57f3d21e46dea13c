#!/usr/bin/env bash
# Issue 32, items 15 and 18: what frugal prints for people. Names from data (entries, class
# folders, files) that hold control characters, escape sequences, direction overrides or bytes
# that are not UTF-8 never reach the terminal raw: every human output of every command is checked
# for control bytes (only "\n" may appear), and the --json documents stay valid JSON. A command's
# result goes to stdout (`frugal ls x.zip | head` works), notes and progress to stderr; under a
# pseudo-terminal inside a notebook (JPY_PARENT_PID set, as ipykernel's `!command` runs it)
# progress is plain lines, not "\r...\x1b[K" redraws.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal frugal-torch
needs_python PIL numpy
cd "$t"

# Two classes whose folder names hold an escape sequence and a byte that is not UTF-8; entries
# whose names erase the line and forge a row; one of them with a bad CRC, so verify reports it.
"$py" - <<'PY'
import io, zipfile, zlib
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
def png(lo, hi):
    buf = io.BytesIO()
    Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()
forge = b"\x1b[2K\r" + b"OK   all good"
with zipfile.ZipFile("hostile.zip", "w", zipfile.ZIP_STORED) as z:
    for cls, lo, hi in [(b"bri\x1b[31mght", 160, 255), (b"da\xffrk\xe2\x80\xae", 0, 96)]:
        for i in range(12):
            info = zipfile.ZipInfo(cls.decode("latin-1") + f"/{i:03d}.png")
            z.writestr(info, png(lo, hi))
    z.writestr("notes\r\x1b[2Kforged.txt", b"hello")
    z.writestr("bad" + forge.decode("latin-1") + ".txt", b"payload")
# Corrupt the CRC of the last entry (its local header and central record).
data = bytearray(open("hostile.zip", "rb").read())
name = ("bad" + forge.decode("latin-1") + ".txt").encode("latin-1")
crc = zlib.crc32(b"payload").to_bytes(4, "little")
for at in [i for i in range(len(data)) if data.startswith(name, i)]:
    for j in range(max(0, at - 46), at):
        if data[j:j + 4] == crc:
            data[j] ^= 0xFF
open("hostile.zip", "wb").write(bytes(data))
open("photo\x1b[2J.png", "wb").write(png(160, 255))
PY

# control_free NAME FILE...: no byte below 0x20 but "\n", no DEL, no C1 control, no ESC.
control_free() {
  local name=$1
  shift
  if "$py" - "$@" <<'PY'; then ok "$name"; else bad "$name" "$@"; fi
import sys
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    bad = [b for b in data if (b < 0x20 and b != 0x0A) or b == 0x7F]
    if bad or "\u202e".encode() in data or b"\xc2\x9b" in data:
        print(f"{path}: control bytes {sorted(set(bad))[:8]}", file=sys.stderr)
        sys.exit(1)
PY
}
valid_json() {
  if "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"; then ok "$2"; else bad "$2" "$1"; fi
}

frugal ls hostile.zip >ls.out 2>ls.err
check "ls: exit 0" '[ $? -eq 0 ]'
control_free "ls: no control character in the table or notes" ls.out ls.err
check "ls: the table is on stdout" 'grep -q "compressed" ls.out && ! grep -q "compressed" ls.err'
check "ls: names shown escaped (\\x1b, \\r)" 'grep -qF "notes\\r\\x1b[2Kforged.txt" ls.out'
check "ls: a pipe gets the first line" '[ "$(frugal ls hostile.zip | head -1 | tr -s " ")" = " size compressed method crc32 name" ]'
frugal ls hostile.zip --json >ls.json 2>ls.jerr
valid_json ls.json "ls --json: valid JSON whatever the names hold"
check "ls --json: the exact name is kept" '"$py" -c "import json,sys; d=json.load(open(\"ls.json\")); sys.exit(0 if any(e[\"name\"].startswith(\"notes\r\x1b\") for e in d[\"entries\"]) else 1)"'

frugal verify hostile.zip >verify.out 2>verify.err
check "verify: exit 3 for the bad CRC" '[ $? -eq 3 ]'
control_free "verify: no control character" verify.out verify.err
check "verify: the BAD line is on stdout and cannot be erased" 'grep -q "^BAD  bad\\\\x1b\[2K\\\\rOK   all good.txt" verify.out'

frugal extract hostile.zip -C ex >ex.out 2>ex.err
control_free "extract: no control character in its messages" ex.out ex.err

frugal train --data hostile.zip --run run --model cnn --epochs 1 --batch-size 8 --workers 1 --val-split 0.25 \
  >train.out 2>train.err
check "train: exit 0" '[ $? -eq 0 ]' || cat train.err
control_free "train: no control character in its log" train.out train.err
frugal eval run --data hostile.zip --workers 1 >eval.out 2>eval.err
check "eval: exit 0" '[ $? -eq 0 ]'
control_free "eval: no control character" eval.out eval.err
check "eval: the table is on stdout, with the class names escaped" 'grep -qF "bri\\x1b[31mght: " eval.out'
frugal eval run --data hostile.zip --workers 1 --json >eval.json 2>/dev/null
valid_json eval.json "eval --json: valid JSON"
frugal predict run "photo"$'\x1b'"[2J.png" >pred.out 2>pred.err
check "predict: exit 0" '[ $? -eq 0 ]'
control_free "predict: no control character" pred.out pred.err
check "predict: its row is on stdout" 'grep -qF "photo\\x1b[2J.png:" pred.out'
frugal bench loader hostile.zip --seconds 0.3 --workers 1 --image-size 28 >bench.out 2>bench.err
control_free "bench loader: no control character" bench.out bench.err
check "bench loader: the figure is on stdout" 'grep -q "images/s" bench.out'
frugal du . >du.out 2>du.err
control_free "du: no control character" du.out du.err
check "du: the table is on stdout" 'grep -q "^total" du.out'

# Item 14: paths on disk that are not UTF-8 (a Latin-1 data zip and run folder). train once ended
# in "internal error [json.exception.type_error.316]" writing config.json; the paths are recorded
# escaped, and a rerun compares them with the recorded ones.
lat_zip=$(printf 'd\xe9.zip') lat_run=$(printf 'r\xe9')
cp hostile.zip "$lat_zip"
frugal train --data "$lat_zip" --run "$lat_run" --model cnn --epochs 1 --batch-size 8 --workers 1 --val-split 0.25 \
  >lat.out 2>lat.err
check "train on a Latin-1 data path into a Latin-1 run folder: exit 0" '[ $? -eq 0 ]' || cat lat.err
check "its config.json records the data path escaped" 'grep -qF "d\\\\xe9.zip" "$lat_run/config.json"'
control_free "train on Latin-1 paths: no control character in its log" lat.out lat.err
frugal train --data "$lat_zip" --run "$lat_run" --model cnn --epochs 1 --batch-size 8 --workers 1 --val-split 0.25 \
  >lat1.out 2>lat1.err
check "the same command again: exit 0 (its data path equals the recorded one)" '[ $? -eq 0 ]' || cat lat1.err
frugal train --data "$lat_zip" --run "$lat_run" --model cnn --epochs 2 --batch-size 8 --workers 1 --val-split 0.25 \
  >lat2.out 2>lat2.err
check "--epochs 2 into it: exit 2 naming the epochs alone, not an internal error" \
  '[ $? -eq 2 ] && grep -q "found epochs: 1 -> 2;" lat2.err && ! grep -q "internal error" lat2.err'

# Issue 47 (b): split, join, pack, clean, compress, export and doctor, fed names that hold an
# escape sequence, CR, BEL, DEL, a C1 control (CSI as UTF-8) and a direction override: nothing
# they print, for people or as --json, holds one raw. The same names pasted into an argument a
# command refuses (every command's parser error) are escaped too.
h=$'ev\x1b[2J\r\x07\x7f\xc2\x9b\xe2\x80\xaeil'
printf 'some bytes to split' >"$h.bin"
frugal split "$h.bin" --size 8 -o sp >split.out 2>split.err
check "split: exit 0" '[ $? -eq 0 ]' || cat split.err
control_free "split: no control character" split.out split.err
frugal split "$h.bin" --size 8 -o spj --json >splitj.out 2>splitj.err
valid_json splitj.out "split --json: valid JSON"
control_free "split --json: no control character (DEL, C1, overrides as \\u escapes)" splitj.out splitj.err
frugal join "sp/$h.bin.manifest.json" >join.out 2>join.err
check "join: exit 0" '[ $? -eq 0 ]' || cat join.err
control_free "join: no control character" join.out join.err
frugal join "sp/$h.bin.manifest.json" --json >joinj.out 2>joinj.err
control_free "join --json (already joined): no control character" joinj.out joinj.err
mkdir -p "packsrc/$h" packsrc/plain
cp "photo"$'\x1b'"[2J.png" "packsrc/$h/a.png" && cp "photo"$'\x1b'"[2J.png" packsrc/plain/b.png
frugal pack packsrc -o "$h.zip" >pack.out 2>pack.err
check "pack: exit 0" '[ $? -eq 0 ]' || cat pack.err
control_free "pack: no control character" pack.out pack.err
frugal pack packsrc -o "j$h.zip" --json >packj.out 2>packj.err
valid_json packj.out "pack --json: valid JSON"
control_free "pack --json: no control character" packj.out packj.err
mkdir -p "cl/$h"
printf x >"cl/$h/f.zip.frugal-tmp-1" && printf y >"cl/$h/out.frugal-join"
touch -d '10 minutes ago' "cl/$h/f.zip.frugal-tmp-1"
frugal clean cl --dry-run >cleann.out 2>cleann.err
check "clean --dry-run: exit 0" '[ $? -eq 0 ]' || cat cleann.err
control_free "clean --dry-run: no control character" cleann.out cleann.err
check "clean --dry-run: the temporary named, escaped" 'grep -qF "would remove cl/ev\\x1b[2J\\r\\x07\\x7f\\u009b\\u202eil/f.zip.frugal-tmp-1" cleann.err'
frugal clean cl --json >cleanj.out 2>cleanj.err
control_free "clean --json: no control character" cleanj.out cleanj.err
frugal compress run -o "$h.safetensors" --quantize fp16 --data hostile.zip >comp.out 2>comp.err
check "compress: exit 0" '[ $? -eq 0 ]' || cat comp.err
control_free "compress (its accuracy over the hostile classes too): no control character" comp.out comp.err
frugal compress run -o "j$h.safetensors" --quantize fp16 --json >compj.out 2>compj.err
control_free "compress --json: no control character" compj.out compj.err
frugal export "$h.safetensors" --format onnx -o "$h.onnx" >export.out 2>export.err
check "export: exit 0" '[ $? -eq 0 ]' || cat export.err
control_free "export: no control character" export.out export.err
frugal export run --format onnx -o "j$h.onnx" --json >exportj.out 2>exportj.err
control_free "export --json: no control character" exportj.out exportj.err
mkdir -p "ws$h"
frugal doctor --workspace "ws$h" >doctor.out 2>doctor.err
check "doctor: exit 0" '[ $? -eq 0 ]'
control_free "doctor: no control character (its workspace's name)" doctor.out doctor.err
check "doctor: the workspace named, escaped" 'grep -qF "wsev\\x1b[2J\\r" doctor.out'
frugal doctor --workspace "ws$h" --json >doctorj.out 2>doctorj.err
valid_json doctorj.out "doctor --json: valid JSON"
control_free "doctor --json: no control character" doctorj.out doctorj.err
for cmd in split join pack clean compress export doctor; do
  frugal "$cmd" "--$h" x >"parse.$cmd.out" 2>"parse.$cmd.err"
  check "$cmd: an unknown option is exit 2" '[ $? -eq 2 ]'
  control_free "$cmd: the parser's error escapes the argument it quotes" "parse.$cmd.out" "parse.$cmd.err"
done

# A notebook's `!frugal ...` runs under a pseudo-terminal: plain lines, no redraws.
if "$py" -c 'import pty' 2>/dev/null; then
  JPY_PARENT_PID=$$ "$py" - "$bin/frugal" <<'PY' >pty.out 2>&1
import os, pty, sys
out = bytearray()
def read(fd):
    data = os.read(fd, 65536)
    out.extend(data)
    return data
pty.spawn([sys.argv[1], "pack", "ex", "-o", "packed.zip"], read)
open("pty.log", "wb").write(out)
PY
  check "under a notebook's pty: plain lines, no \\r or ESC[K redraws" \
    '"$py" -c "import re,sys; d=open(\"pty.log\",\"rb\").read(); sys.exit(0 if d and b\"\x1b[K\" not in d and not re.search(rb\"\r(?!\n)\", d) else 1)"'
fi
finish
